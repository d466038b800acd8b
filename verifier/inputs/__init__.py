"""The inputs stage: the adversarial catalogue, its named samplers and Hypothesis shape strategies
(``catalogue``), and which of them a kernel is checked on (``cases``: case selection, repro lookup, draws)."""
