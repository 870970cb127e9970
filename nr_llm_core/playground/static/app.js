// nr-llm playground: the three views and the API calls. Rendering helpers are in render.js;
// nothing here turns a string into markup.
"use strict";

(() => {
  const TOKEN = document.querySelector('meta[name="nr-llm-token"]').content;
  const { appendVisible, el, clear, pretty, jsonBlock, tabs, renderArtifacts, NOTHING } =
    window.nrLlm;

  function showError(message) {
    const banner = document.getElementById("load-error");
    clear(banner);
    appendVisible(banner, message);
    banner.hidden = false;
  }

  // -- the API ---------------------------------------------------------------------------------

  function request(path, body, accept) {
    const headers = { "X-NR-LLM-Token": TOKEN, Accept: accept || "application/json" };
    const options = { method: "GET", headers, cache: "no-store", credentials: "omit" };
    if (body !== undefined) {
      options.method = "POST";
      headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    return fetch(path, options);
  }

  async function getJSON(path, body) {
    const response = await request(path, body);
    const data = await response.json();
    if (!response.ok) throw new Error(data.error || "HTTP " + response.status);
    return data;
  }

  // Reads an NDJSON response line by line as it arrives.
  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let newline;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (line.trim()) onEvent(JSON.parse(line));
      }
    }
    buffer += decoder.decode();
    if (buffer.trim()) onEvent(JSON.parse(buffer));
  }

  // The one place a run's URL is built. The id goes as its UTF-8 bytes in base64url (the
  // server's run_ref): any id the store lists, control characters included, which no URL path
  // may carry even percent-encoded, addresses exactly its run.
  function runPath(runId, action) {
    let binary = "";
    for (const byte of new TextEncoder().encode(runId)) binary += String.fromCharCode(byte);
    const ref = btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    return "/api/run/" + ref + (action ? "/" + action : "");
  }

  // -- shared state ----------------------------------------------------------------------------

  const state = { config: null, groups: [], loadErrors: [], tool: null, dataClassNote: "" };
  let runLevel = null; // the level the current run is recorded (and shown) at

  function fillSelect(select, values, chosen) {
    clear(select);
    for (const value of values) {
      const option = el("option", null, value);
      option.value = value;
      option.selected = value === chosen;
      select.appendChild(option);
    }
  }

  // -- tool runner -----------------------------------------------------------------------------

  function pickTool(tool) {
    state.tool = tool;
    document.querySelectorAll(".tool-list button").forEach((b) => {
      b.setAttribute("aria-pressed", String(b.dataset.tool === tool.name));
    });
    appendVisible(clear(document.getElementById("tool-title")), tool.name);
    appendVisible(clear(document.getElementById("tool-description")), tool.description);
    const meta = clear(document.getElementById("tool-meta"));
    const dataClass = tool.data_class || "undeclared → " + tool.effective_data_class;
    const data = el("span", "chip data-class", "data class: " + dataClass);
    data.title = state.dataClassNote;
    meta.appendChild(data);
    meta.appendChild(el("span", "chip zones", "offered to: " + tool.offered_to.join(", ")));
    if (tool.requires_approval) meta.appendChild(el("span", "chip warn", "requires approval"));
    if (!tool.enabled) meta.appendChild(el("span", "chip warn", "disabled"));
    document.getElementById("tool-args").value = pretty(tool.example ?? {});
    const run = document.getElementById("tool-run");
    run.textContent = tool.requires_approval ? "Approve and run" : "Run tool";
    run.disabled = false;
    document.getElementById("tool-confirm").hidden = true;
    clear(document.getElementById("tool-output"));
  }

  function renderToolList(loadErrors) {
    const list = clear(document.getElementById("tool-list"));
    if (loadErrors.length) {
      const box = el("div", "banner error", loadErrors.length + " tool(s) could not be loaded:");
      const items = el("ul");
      for (const e of loadErrors) {
        items.appendChild(el("li", null, (e.entry_point || NOTHING) + " (" +
          (e.distribution || NOTHING) + "): " + e.reason));
      }
      box.appendChild(items);
      list.appendChild(box);
    }
    for (const group of state.groups) {
      const section = el("div", "group", el("h3", null, group.group));
      for (const tool of group.tools) {
        const button = el("button", "tool", tool.name);
        button.type = "button";
        button.dataset.tool = tool.name;
        if (!tool.enabled) button.classList.add("off");
        button.addEventListener("click", () => pickTool(tool));
        section.appendChild(button);
      }
      list.appendChild(section);
    }
  }

  // A tool that requires approval asks first, in the page: the second click is the approval,
  // and the server records the call as a run of its own (ADR 0044).
  function askOrRunTool() {
    if (!state.tool.requires_approval) {
      runTool(false);
      return;
    }
    document.getElementById("tool-confirm").hidden = false;
    document.getElementById("tool-run").disabled = true;
  }

  function closeConfirm() {
    document.getElementById("tool-confirm").hidden = true;
    document.getElementById("tool-run").disabled = false;
  }

  async function runTool(approved) {
    document.getElementById("tool-confirm").hidden = true;
    const output = clear(document.getElementById("tool-output"));
    let args;
    try {
      args = JSON.parse(document.getElementById("tool-args").value);
    } catch (error) {
      output.appendChild(el("p", "banner error", "The arguments are not valid JSON."));
      document.getElementById("tool-run").disabled = false;
      return;
    }
    const button = document.getElementById("tool-run");
    button.disabled = true;
    output.appendChild(el("p", "muted", "Running …"));
    try {
      const result = await getJSON("/api/tools/" + encodeURIComponent(state.tool.name) +
        "/invoke", {
        arguments: args,
        privacy: document.getElementById("tool-privacy").value,
        approved,
      });
      clear(output);
      output.dataset.state = result.is_error ? "error" : "ok";
      if (typeof result.run_id === "string") {
        const recorded = el("p", "banner warn recorded",
          "Approved by you and recorded as run " + result.run_id + ".");
        recorded.dataset.run = result.run_id;
        output.appendChild(recorded);
      }
      output.appendChild(tabs([
        { name: "Content", render: (p) => p.appendChild(
          el("pre", result.is_error ? "text error" : "text", result.content)) },
        { name: "Artifacts", render: (p) => renderArtifacts(p, result.artifacts) },
        { name: "Persisted", render: (p) => {
          p.appendChild(el("p", "muted", "As the audit store keeps this step at " +
            result.privacy + ":"));
          p.appendChild(jsonBlock(result.persisted));
        } },
      ], result.artifacts.length ? "Artifacts" : "Content"));
    } catch (error) {
      clear(output).appendChild(el("p", "banner error", error.message));
    } finally {
      button.disabled = false;
    }
  }

  // -- agent run -------------------------------------------------------------------------------

  function syncGroup(groupBox) {
    const boxes = [...groupBox.closest(".pick-group").querySelectorAll("input.pick-tool")]
      .filter((b) => !b.disabled);
    const on = boxes.filter((b) => b.checked).length;
    groupBox.checked = boxes.length > 0 && on === boxes.length;
    groupBox.indeterminate = on > 0 && on < boxes.length;
  }

  // The tools the chosen provider may be offered; the others are shown disabled, each with
  // the server's reason and fix (the decision the loop itself takes) as text and as a title.
  function renderToolPicker() {
    const provider = document.getElementById("agent-provider").value;
    const root = clear(document.getElementById("agent-tools"));
    let offerable = 0;
    for (const group of state.groups) {
      const box = el("div", "pick-group");
      const groupBox = el("input", "pick-all");
      groupBox.type = "checkbox";
      groupBox.dataset.group = group.group;
      box.appendChild(el("label", "group-label", groupBox, " " + group.group));
      const list = el("div", "pick-list");
      for (const tool of group.tools) {
        const decision = (tool.offers || {})[provider];
        const offered = decision ? decision.offered : tool.enabled;
        if (offered) offerable += 1;
        const check = el("input", "pick-tool");
        check.type = "checkbox";
        check.value = tool.name;
        check.checked = offered;
        check.disabled = !offered;
        check.addEventListener("change", () => syncGroup(groupBox));
        const label = el("label", offered ? "pick" : "pick off", check, " " + tool.name);
        label.dataset.tool = tool.name;
        if (tool.requires_approval) label.appendChild(el("span", "chip warn", "approval"));
        if (!offered && decision) {
          const why = "not offered to " + provider + ": " + decision.reason + ".";
          const fix = "Fix: " + decision.fix + ".";
          label.dataset.code = decision.code;
          label.title = why + " " + fix;
          label.appendChild(el("span", "why", why, " ", el("span", "fix", fix)));
        }
        list.appendChild(label);
      }
      box.appendChild(list);
      groupBox.addEventListener("change", () => {
        box.querySelectorAll("input.pick-tool").forEach((b) => {
          if (!b.disabled) b.checked = groupBox.checked;
        });
        syncGroup(groupBox);
      });
      root.appendChild(box);
      syncGroup(groupBox);
    }
    if (!offerable) {
      root.prepend(el("p", "banner warn none-offered",
        "No tool can be offered to " + provider + ": the run gets none. Each tool below says why."));
    }
  }

  function setStatus(stateName, ...parts) {
    const status = clear(document.getElementById("run-status"));
    status.dataset.state = stateName;
    for (const part of parts) appendVisible(status, part);
  }

  // A provider record ({kind, model}) as the store kept it, in words (shown as text only).
  function providerWords(record) {
    if (!record || typeof record !== "object") return "an unrecorded provider";
    const model = record.model === null || record.model === undefined
      ? " (no model)" : " (model " + String(record.model) + ")";
    return String(record.kind) + model;
  }

  // Which provider a run was suspended with and which went on (ADR 0036), or null when the
  // step records no change.
  function providerChange(step) {
    const change = step.provider_change;
    if (change && typeof change === "object") {
      return "suspended with " + providerWords(change.suspended_with) +
        ", resumed with " + providerWords(change.resumed_with);
    }
    return step.provider_changed === true ? "(which one is not recorded)" : null;
  }

  // A step as the run's privacy level keeps it: at metadata and none its content keys are
  // gone and only counts and names remain, so each summary reads either form.
  function stepSummary(step) {
    const change = providerChange(step);
    const changed = change === null ? "" : " · provider changed " + change;
    switch (step.kind) {
      case "request": {
        const sent = step.messages_sent ? step.messages_sent.length : step.messages_sent_count;
        return sent === undefined ? "request" : "request · " + sent + " message(s) sent";
      }
      case "llm": {
        const calls = step.requested_tool_calls
          ? step.requested_tool_calls.map((c) => c.name) : step.requested_tool_names;
        if (calls === undefined) return "model";
        return "model · " + (calls.length ? "asks for " + calls.join(", ") : "answers");
      }
      case "tool":
        if (step.tool_name === undefined) return "tool";
        return "tool · " + step.tool_name + (step.tool_is_error ? " (error)" : "");
      case "approval":
        return "approval · " + Object.entries(step.approvals || {})
          .map(([id, ok]) => id + (ok ? " approved" : " denied")).join(", ") + changed;
      case "resume":
        return "resume · " + (typeof step.lost_calls === "number" ? step.lost_calls : "?") +
          " call(s) not run again" + changed;
      case "error":
        return step.reason === undefined ? "error" : "error · " + step.reason;
      default:
        return String(step.kind);
    }
  }

  function recordTab(step) {
    return { name: "Step", render: (p) => p.appendChild(jsonBlock(step)) };
  }

  // The stream sends each step as the audit store keeps it at the run's level; content tabs
  // appear only when that level kept the content (redacted, full).
  function stepBody(event) {
    const step = event.step;
    if (step.kind === "tool" && "tool_result" in step) {
      return tabs([
        { name: "Arguments", render: (p) => p.appendChild(jsonBlock(step.tool_arguments)) },
        { name: "Result", render: (p) => p.appendChild(
          el("pre", step.tool_is_error ? "text error" : "text", step.tool_result)) },
        { name: "Artifacts", render: (p) => renderArtifacts(p, step.tool_artifacts) },
        recordTab(step),
      ], step.tool_artifacts ? "Artifacts" : "Result");
    }
    if (step.kind === "llm" && "content" in step) {
      return tabs([
        { name: "Content", render: (p) => p.appendChild(el("pre", "text", step.content || "")) },
        recordTab(step),
      ], "Content");
    }
    const body = tabs([recordTab(step)], "Step");
    if (runLevel === "none" || runLevel === "metadata") {
      body.prepend(el("p", "muted not-kept",
        "content not shown at privacy level " + (runLevel || "unknown") +
        ": the live view shows what the audit store keeps"));
    }
    return body;
  }

  function addStep(event) {
    const step = event.step;
    const item = el("li", "step");
    item.dataset.kind = step.kind;
    item.dataset.index = String(event.index);
    const details = el("details");
    details.open = step.kind === "tool" || step.kind === "error";
    details.appendChild(el("summary", null,
      el("span", "round", "round " + step.round), " ", stepSummary(step),
      el("span", "ms", Math.round(step.duration_ms) + " ms")));
    details.appendChild(stepBody(event));
    item.appendChild(details);
    document.getElementById("run-steps").appendChild(item);
  }

  // The pending calls of a waiting run, each with its complete arguments; at privacy level
  // none (or when the server says nothing) a note stands in for them and approving needs an
  // explicit tick. `view` is an awaiting_approval event or what the store says of the run
  // (ADR 0037): `problem` says why it cannot be decided here, `refusal` why the last decision
  // was refused. `decide` adds Approve and Deny; Discard is always offered.
  function renderApproval(box, view, { refusal, decide, onDiscarded }) {
    clear(box);
    box.dataset.run = view.run_id;
    box.appendChild(el("h3", null, "Waiting for your approval"));
    if (refusal) box.appendChild(el("p", "banner error refusal", "Refused: " + refusal));
    if (view.problem) {
      const problem = el("p", "banner warn problem", view.problem);
      problem.hidden = view.problem === refusal; // said once, as the refusal
      box.appendChild(problem);
    }
    if (typeof view.digest === "string") {
      box.appendChild(el("p", "muted", "digest ", el("code", "digest", view.digest)));
    }
    if (view.suspended_with) {
      // A decision goes on with the provider that wrote the pending turn (ADR 0033).
      box.appendChild(el("p", "muted suspended-with",
        "suspended with provider " + providerWords(view.suspended_with)));
    }
    const shown = view.arguments_shown === true;
    if (!shown && view.pending.length) {
      box.appendChild(el("p", "banner warn not-shown",
        "arguments not shown at privacy level " + (view.privacy || "unknown")));
    }
    const list = el("ul", "pending");
    for (const call of view.pending) {
      const item = el("li", "call", el("code", "call-id", call.id), " ",
        el("strong", null, call.name),
        call.needs_approval ? el("span", "chip warn", "needs approval")
          : el("span", "chip", "runs on resume"));
      if (typeof call.arguments_error === "string") {
        item.appendChild(el("p", "banner error",
          "invalid arguments, answered with an error: " + call.arguments_error));
      } else if (shown) {
        item.appendChild(jsonBlock(call.arguments));
      }
      list.appendChild(item);
    }
    box.appendChild(list);
    const row = el("div", "row wrap decide");
    const decidable = view.decidable !== false;
    if (!decide && decidable) {
      box.appendChild(el("p", "muted", "Approve or deny it in the Agent run view, where it paused."));
    }
    let blind = null;
    if (decide && !shown && decidable) {
      blind = el("input");
      blind.type = "checkbox";
      blind.id = "blind";
      row.appendChild(el("label", "inline", blind, " Approve without seeing the arguments"));
    }
    const buttons = [];
    if (decide) {
      for (const [label, approved] of [["Approve", true], ["Deny", false]]) {
        const button = el("button", approved ? "primary" : "danger", label);
        button.type = "button";
        button.id = approved ? "approve" : "deny";
        button.disabled = !decidable || (approved && blind !== null);
        if (approved && blind) {
          blind.addEventListener("change", () => { button.disabled = !blind.checked; });
        }
        button.addEventListener("click", () => {
          row.querySelectorAll("button, input").forEach((b) => { b.disabled = true; });
          streamRun(runPath(view.run_id, "resume"),
            { digest: view.digest, approved });
        });
        buttons.push(button);
        row.appendChild(button);
      }
    }
    const discard = el("button", "danger discard", "Discard run");
    discard.type = "button";
    discard.title = "End the run: its pending calls never run and its saved state is wiped";
    row.appendChild(discard);
    box.appendChild(row);
    // A second, explicit step: a discard cannot be undone.
    const confirm = el("div", "banner warn confirm-discard");
    confirm.hidden = true;
    confirm.appendChild(el("p", null, "Discard run " + view.run_id +
      "? Its pending calls never run, and its saved state is wiped. This cannot be undone."));
    const yes = el("button", "danger discard-confirm", "Yes, discard it");
    const no = el("button", "discard-cancel", "Keep it waiting");
    yes.type = "button";
    no.type = "button";
    confirm.appendChild(el("div", "row", yes, no));
    box.appendChild(confirm);
    discard.addEventListener("click", () => {
      confirm.hidden = false;
      discard.disabled = true;
    });
    no.addEventListener("click", () => {
      confirm.hidden = true;
      discard.disabled = false;
    });
    yes.addEventListener("click", async () => {
      box.querySelectorAll("button, input").forEach((b) => { b.disabled = true; });
      let response;
      try {
        response = await request(runPath(view.run_id, "discard"), {});
      } catch (error) {
        // Not sent, or no answer: the run may still wait; shown again as it was.
        renderApproval(box, view, { refusal: "the request failed: " + error.message, decide,
          onDiscarded });
        return;
      }
      const data = await response.json().catch(() => ({}));
      if (response.ok) {
        showGone(box, data.reason, data.discarded ? "discarded" : "gone");
        if (onDiscarded) onDiscarded(data);
        return;
      }
      showRefusal(box, data, response.status, { decide, onDiscarded });
    });
    return buttons;
  }

  // A run that no longer waits, and why (who discarded or resumed it), as text.
  function showGone(box, reason, kind) {
    clear(box);
    box.dataset.state = kind;
    box.appendChild(el("p", "banner warn gone", kind === "discarded"
      ? "Discarded: " + reason + ". Its saved state is wiped; no pending call ran."
      : "This run no longer waits: " + reason));
  }

  // A refused decision or discard: the run as the store has it now, never forgotten.
  function showRefusal(box, data, status, options) {
    const reason = data.error || "HTTP " + status;
    const view = data.approval;
    if (view && view.waiting === true) {
      renderApproval(box, view, { ...options, refusal: reason });
    } else if (view && view.waiting === false) {
      showGone(box, reason, "gone");
    } else {
      clear(box).appendChild(el("p", "banner error refusal", "Refused: " + reason));
    }
  }

  function agentApproval() {
    return document.getElementById("run-approval");
  }

  function onDiscardedHere(data) {
    setStatus(data.discarded ? "discarded" : "gone", data.discarded
      ? "Discarded: run " + data.run_id + " ended without running its pending calls."
      : "Nothing changed: " + data.reason);
  }

  function showApproval(event) {
    renderApproval(agentApproval(), event, { decide: true, onDiscarded: onDiscardedHere });
  }

  function onRunEvent(event) {
    switch (event.event) {
      case "context":
        runLevel = event.privacy;
        setStatus("running", "Running " + (event.resumed ? "(resumed) " : "") + "· run " +
          event.run_id + " · " + event.provider + " · privacy " + event.privacy +
          " · tools: " + (event.tools.join(", ") || NOTHING));
        break;
      case "step":
        addStep(event);
        break;
      case "done":
        setStatus("done", "Done: " + event.termination_reason + " after " + event.iterations +
          " completion(s)" + (event.truncated ? ", truncated at the round cap" : ""));
        document.getElementById("run-final").appendChild(
          el("div", "answer", el("h3", null, "Answer"), el("pre", "text", event.content)));
        break;
      case "error":
        setStatus("error", (event.approval === undefined ? "Failed: " : "Refused: ") +
          event.reason);
        if (event.approval !== undefined) {
          // A decision that was refused: the run as the store has it now.
          showRefusal(agentApproval(), { error: event.reason, approval: event.approval }, 0,
            { decide: true, onDiscarded: onDiscardedHere });
        }
        break;
      case "awaiting_approval":
        setStatus("awaiting", "Paused: run " + event.run_id + " waits for approval.");
        showApproval(event);
        break;
      default:
        break;
    }
  }

  async function streamRun(path, body) {
    const start = document.getElementById("agent-run");
    start.disabled = true;
    clear(document.getElementById("run-approval"));
    try {
      const response = await request(path, body, "application/x-ndjson");
      if (!response.ok) {
        const data = await response.json().catch(() => ({}));
        setStatus("error", "Refused: " + (data.error || "HTTP " + response.status));
        if (data.approval !== undefined) {
          showRefusal(agentApproval(), data, response.status,
            { decide: true, onDiscarded: onDiscardedHere });
        }
        return;
      }
      await readEvents(response, onRunEvent);
    } catch (error) {
      setStatus("error", "The stream broke: " + error.message);
    } finally {
      start.disabled = false;
    }
  }

  function startRun() {
    clear(document.getElementById("run-steps"));
    clear(document.getElementById("run-final"));
    const tools = [...document.querySelectorAll("#agent-tools input.pick-tool")]
      .filter((b) => b.checked).map((b) => b.value);
    setStatus("starting", "Starting …");
    streamRun("/api/runs", {
      prompt: document.getElementById("agent-prompt").value,
      provider: document.getElementById("agent-provider").value,
      max_rounds: Number.parseInt(document.getElementById("agent-rounds").value, 10) || 5,
      privacy: document.getElementById("agent-privacy").value,
      tools,
    });
  }

  // -- runs ------------------------------------------------------------------------------------

  // note: a banner under the title (what the last action on the run did).
  async function showRun(runId, note) {
    const box = clear(document.getElementById("run-detail"));
    box.hidden = false;
    try {
      const detail = await getJSON(runPath(runId));
      box.appendChild(el("h2", null, "Run " + runId));
      if (note) box.appendChild(el("p", "banner warn gone", note));
      const meta = detail.run.meta || {};
      const failed = detail.run.status === "failed";
      box.appendChild(el("p", failed ? "banner error run-summary" : "muted run-summary",
        "status " + detail.run.status +
        (detail.run.termination_reason ? " (" + detail.run.termination_reason + ")" : "") +
        " · provider " + (meta.provider || "-") + " · model " + (meta.model || "-") +
        " · privacy " + detail.run.privacy_level + " · " + detail.steps.length +
        " persisted step(s)"));
      for (const record of detail.steps) {
        const change = providerChange(record.step);
        if (change === null) continue;
        box.appendChild(el("p", "banner warn provider-change",
          "provider changed at #" + record.seq + " " + String(record.step.kind) + ": " + change));
      }
      const list = el("ol", "steps");
      for (const record of detail.steps) {
        const item = el("li", "step");
        item.dataset.kind = String(record.step.kind);
        const details = el("details", null, el("summary", null,
          "#" + record.seq + " · " + record.step.kind +
          (record.step.tool_name ? " " + record.step.tool_name : "") +
          " · round " + record.step.round));
        details.appendChild(jsonBlock(record.step));
        item.appendChild(details);
        list.appendChild(item);
      }
      box.appendChild(list);
      if (detail.approval) {
        // A run waiting in the store, whoever paused it: its calls, and Discard.
        const waiting = el("div", "run-waiting");
        box.insertBefore(waiting, list);
        if (detail.approval.waiting) {
          renderApproval(waiting, detail.approval, { decide: false, onDiscarded: (data) => {
            loadRuns();
            showRun(runId, (data.discarded ? "Discarded: " : "Nothing changed: ") + data.reason);
          } });
        } else {
          showGone(waiting, detail.approval.reason, "gone");
        }
      }
    } catch (error) {
      box.appendChild(el("p", "banner error", error.message));
    }
  }

  // The prompt as the store kept it (redacted at redacted); at metadata and none no text is
  // kept, and the cell says so.
  function promptCell(run) {
    if (typeof run.prompt !== "string") {
      return el("td", "prompt muted", "not kept at " + run.privacy_level);
    }
    const short = run.prompt.length > 80 ? run.prompt.slice(0, 79) + "…" : run.prompt;
    const cell = el("td", "prompt", short);
    cell.title = run.prompt;
    return cell;
  }

  async function loadRuns() {
    const note = clear(document.getElementById("runs-note"));
    const table = clear(document.getElementById("runs-table"));
    if (!state.config.runs_available) {
      appendVisible(note, "No audit store is configured for this server.");
      return;
    }
    try {
      const data = await getJSON("/api/runs");
      appendVisible(note, data.runs.length + " run(s), newest first. Pick one to see its steps.");
      const head = el("tr");
      for (const name of ["Started", "Status", "Run", "Prompt", "Provider", "Model", "Steps",
        "Privacy", "Reason"]) {
        head.appendChild(el("th", null, name));
      }
      table.appendChild(el("thead", null, head));
      const body = el("tbody");
      for (const run of data.runs) {
        const open = el("button", "link", run.id.slice(0, 12));
        open.type = "button";
        open.title = run.id;
        open.addEventListener("click", () => showRun(run.id));
        const failed = run.status === "failed";
        const status = el("span", failed ? "chip error" : "chip", run.status);
        const reason = el("td", "reason", run.termination_reason || NOTHING);
        if (failed && run.error) reason.appendChild(el("span", "error-text", ": " + run.error));
        const row = el("tr", failed ? "failed" : null,
          el("td", null, String(run.started_at).replace("T", " ").slice(0, 19)),
          el("td", "run-state", status), el("td", null, open), promptCell(run),
          el("td", "provider", run.provider || NOTHING), el("td", "model", run.model || NOTHING),
          el("td", null, String(run.steps)), el("td", null, run.privacy_level), reason);
        row.dataset.status = run.status;
        row.dataset.run = run.id;
        body.appendChild(row);
      }
      table.appendChild(body);
    } catch (error) {
      appendVisible(note, error.message);
    }
  }

  // -- navigation and start-up -----------------------------------------------------------------

  function show(view) {
    const name = ["tools", "agent", "runs"].includes(view) ? view : "tools";
    document.querySelectorAll(".view").forEach((v) => { v.hidden = v.id !== "view-" + name; });
    document.querySelectorAll("button.nav").forEach((b) => {
      b.setAttribute("aria-current", String(b.dataset.view === name));
    });
    if (name === "runs" && state.config) loadRuns();
  }

  async function init() {
    document.querySelectorAll("button.nav").forEach((b) => {
      b.addEventListener("click", () => {
        history.replaceState(null, "", location.search + "#" + b.dataset.view);
        show(b.dataset.view);
      });
    });
    document.getElementById("tool-run").addEventListener("click", askOrRunTool);
    document.querySelector("#tool-confirm .confirm-run").addEventListener("click",
      () => runTool(true));
    document.querySelector("#tool-confirm .confirm-cancel").addEventListener("click",
      closeConfirm);
    document.getElementById("agent-run").addEventListener("click", startRun);
    document.getElementById("runs-refresh").addEventListener("click", loadRuns);
    try {
      state.config = await getJSON("/api/config");
      const tools = await getJSON("/api/tools");
      state.groups = tools.groups;
      state.loadErrors = tools.load_errors;
      state.dataClassNote = tools.data_class_note || "";
    } catch (error) {
      showError("Could not load the playground: " + error.message);
      return;
    }
    const levels = state.config.privacy_levels;
    fillSelect(document.getElementById("tool-privacy"), levels, state.config.default_privacy);
    fillSelect(document.getElementById("agent-privacy"), levels, state.config.default_privacy);
    fillSelect(document.getElementById("agent-provider"), state.config.providers,
      state.config.providers[0]);
    renderToolList(state.loadErrors);
    renderToolPicker();
    document.getElementById("agent-provider").addEventListener("change", renderToolPicker);
    window.addEventListener("hashchange", () => show(location.hash.slice(1)));
    document.body.dataset.ready = "true";
    show(location.hash.slice(1));
  }

  init();
})();
