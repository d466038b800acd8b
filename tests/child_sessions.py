"""What the pytest sessions these tests start in child processes share.

NO_HYPOTHESIS_PLUGIN: Hypothesis's pytest plugin imports all of Hypothesis in every session's terminal summary
(about 0.8 s of CPU here, a third of a small session), whether or not a test used Hypothesis. None of these
sessions needs the plugin (verifier drives Hypothesis itself), and the tests start some twenty of them. The
suite's own session keeps it.
"""
NO_HYPOTHESIS_PLUGIN = ("-p", "no:hypothesispytest")
