"""Concurrency: how the package's blocking and async calls run, and how they stop.

==========================  ===========================================================
module                      concept
==========================  ===========================================================
:mod:`.workers`             daemon worker threads for blocking calls, and their gate
:mod:`.tasks`               running coroutines together: one failure cancels the others
:mod:`.step_driver`         a flow written once as steps, run by a sync or an async driver
==========================  ===========================================================
"""
