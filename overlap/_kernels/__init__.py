"""The compiled kernels of ``overlap``: one concern a module (see docs/development.md).

Nothing here is public API: ``overlap.search``, ``overlap.dedup`` and the
other core modules validate their arguments and then call these modules.
"""
