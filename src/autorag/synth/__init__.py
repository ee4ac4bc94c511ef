"""Synthesis (issue 19): the agent proposes wiki pages from the workspace's documents in
five passes, and nothing is written until a person approves."""
