"""Oracles: compare a target's answer with every answer the model allows, one protocol each."""
