"""The core: label specs, findings, the check registry, summaries and the engine.

Nothing here imports a reader, the CLI, an output format or torch.
"""
