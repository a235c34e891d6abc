"""End-to-end tests of the controller runtime.

A package so that these modules are imported as ``runtime.test_*`` and do not
collide with ``tests/unit/runtime/test_*.py`` of the same basename under pytest's
default (prepend) import mode.
"""
