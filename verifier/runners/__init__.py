"""Runners: the one place that knows how a kernel is launched (cuda, triton, callable)."""
