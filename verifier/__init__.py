"""kernel-verifier."""
