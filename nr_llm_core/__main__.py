"""``python -m nr_llm_core`` is ``nr-llm``."""

from nr_llm_core.cli import main

main()
