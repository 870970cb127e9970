// nr-llm playground: building the page from untrusted strings. Every string from a tool, a
// model or the store becomes text nodes (appendVisible / textContent): it is never parsed as
// markup. app.js uses these through window.nrLlm.
"use strict";

(() => {
  const MARKER_LABEL = "Artifacts omitted";
  // The one label for an absent value, and the sentence for no artifacts: the CLI's too
  // (nr_llm_core/cli/_output.py NOTHING, NO_ARTIFACTS).
  const NOTHING = "-";
  // Control characters (but tab and newline), format characters (bidi overrides, zero-width),
  // line/paragraph separators and lone surrogates: shown as escapes so they cannot hide text.
  const INVISIBLE = /(?![\t\n])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;

  // -- building the page -----------------------------------------------------------------------

  function hex(code, width) {
    return code.toString(16).padStart(width, "0");
  }

  // A JSON escape of one character: \uXXXX, or a surrogate pair beyond the BMP.
  function jsonEscape(code) {
    if (code <= 0xffff) return "\\u" + hex(code, 4);
    const offset = code - 0x10000;
    return "\\u" + hex(0xd800 + (offset >> 10), 4) + "\\u" + hex(0xdc00 + (offset & 0x3ff), 4);
  }

  // json: the text is JSON, and each escape is a JSON escape, so the shown text still decodes
  // to the same value.
  function appendVisible(parent, value, json) {
    const text = String(value);
    let last = 0;
    for (const match of text.matchAll(INVISIBLE)) {
      if (match.index > last) {
        parent.appendChild(document.createTextNode(text.slice(last, match.index)));
      }
      const code = match[0].codePointAt(0);
      const mark = document.createElement("span");
      mark.className = "ctl";
      // The CLI's forms (visible()): each escape names one code point, \UXXXXXXXX above
      // U+FFFF (a four-digit \u and a fifth digit would read as two characters).
      mark.textContent = json ? jsonEscape(code)
        : code < 0x100 ? "\\x" + hex(code, 2)
        : code <= 0xffff ? "\\u" + hex(code, 4) : "\\U" + hex(code, 8);
      mark.title = "invisible character U+" + hex(code, 4).toUpperCase();
      parent.appendChild(mark);
      last = match.index + match[0].length;
    }
    if (last < text.length) {
      parent.appendChild(document.createTextNode(text.slice(last)));
    }
    return parent;
  }

  function el(tag, className, ...children) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    for (const child of children) {
      if (child === null || child === undefined) continue;
      if (child instanceof Node) node.appendChild(child);
      else appendVisible(node, child);
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  function pretty(value) {
    return JSON.stringify(value, null, 2);
  }

  // Pretty JSON as text; what is shown (escapes included) decodes to exactly ``value``.
  function jsonBlock(value) {
    return appendVisible(el("pre", "json"), pretty(value), true);
  }

  // Tabs: [{name, render(panel)}]; panels are rendered when first shown.
  function tabs(items, selected) {
    const box = el("div", "tabs");
    const bar = el("div", "tab-bar");
    bar.setAttribute("role", "tablist");
    const panel = el("div", "tab-panel");
    panel.setAttribute("role", "tabpanel");
    const buttons = [];
    function choose(index) {
      buttons.forEach((b, i) => b.setAttribute("aria-selected", String(i === index)));
      clear(panel);
      panel.dataset.tab = items[index].name;
      items[index].render(panel);
    }
    items.forEach((item, index) => {
      const button = el("button", "tab", item.name);
      button.type = "button";
      button.setAttribute("role", "tab");
      button.dataset.tab = item.name;
      button.addEventListener("click", () => choose(index));
      buttons.push(button);
      bar.appendChild(button);
    });
    box.append(bar, panel);
    choose(Math.max(0, items.findIndex((i) => i.name === selected)));
    return box;
  }

  // -- artifacts -------------------------------------------------------------------------------

  function isMarker(artifact) {
    return (
      artifact !== null && typeof artifact === "object" && artifact.type === "text" &&
      artifact.label === MARKER_LABEL && artifact.data !== null &&
      typeof artifact.data === "object" && typeof artifact.data.text === "string"
    );
  }

  function isStringArray(value) {
    return Array.isArray(value) && value.every((v) => typeof v === "string");
  }

  function isTable(data) {
    return (
      data !== null && typeof data === "object" && isStringArray(data.columns) &&
      Array.isArray(data.rows) &&
      data.rows.every((row) => isStringArray(row) && row.length === data.columns.length)
    );
  }

  function renderTable(data) {
    const table = el("table", "grid artifact-table");
    const headRow = el("tr");
    for (const column of data.columns) headRow.appendChild(el("th", null, column));
    table.appendChild(el("thead", null, headRow));
    const body = el("tbody");
    for (const row of data.rows) {
      const tr = el("tr");
      for (const cell of row) tr.appendChild(el("td", null, cell));
      body.appendChild(tr);
    }
    table.appendChild(body);
    return el("div", "scroll", table);
  }

  function renderArtifact(artifact) {
    const figure = el("figure", "artifact");
    const kind = artifact && typeof artifact.type === "string" ? artifact.type : "unknown";
    const label = artifact && typeof artifact.label === "string" ? artifact.label : "(no label)";
    figure.appendChild(el("figcaption", null, label, el("span", "chip", kind)));
    const data = artifact ? artifact.data : undefined;
    if (kind === "table" && isTable(data)) {
      figure.dataset.render = "table";
      figure.appendChild(renderTable(data));
    } else if (kind === "text" && data && typeof data.text === "string") {
      figure.dataset.render = "text";
      figure.appendChild(el("pre", "text", data.text));
    } else {
      figure.dataset.render = "json";
      figure.appendChild(jsonBlock(artifact));
    }
    return figure;
  }

  function renderArtifacts(panel, artifacts) {
    if (!Array.isArray(artifacts) || artifacts.length === 0) {
      panel.appendChild(el("p", "muted", "No artifacts."));
      return;
    }
    if (artifacts.length === 1 && isMarker(artifacts[0])) {
      const box = el("div", "omitted", el("strong", null, MARKER_LABEL));
      box.appendChild(el("p", null, "The host replaced this result's artifacts: ",
        el("span", "reason", artifacts[0].data.text)));
      panel.appendChild(box);
      return;
    }
    for (const artifact of artifacts) panel.appendChild(renderArtifact(artifact));
  }

  window.nrLlm = Object.freeze({
    appendVisible, el, clear, pretty, jsonBlock, tabs, renderArtifacts, NOTHING,
  });
})();
