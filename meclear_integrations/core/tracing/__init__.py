"""Tracing: what a clearance puts into OpenTelemetry, without importing it in the engine.

==========================  ===========================================================
module                      concept
==========================  ===========================================================
:mod:`.hooks`               the engine's hook points (:func:`~.hooks.start_trace`); the
                            OpenTelemetry spans are loaded lazily, once the app has them
:mod:`.scope`               what an integration tells the tracing about a clearance
:mod:`.settings`            how much is traced (``detail``) and whether contents are
==========================  ===========================================================

This package imports nothing, so the spans (:mod:`meclear_integrations.telemetry.spans`)
read :mod:`.scope` and :mod:`.settings` without loading the hooks.
"""
