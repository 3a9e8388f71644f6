"""Concurrency: how the package's blocking and async calls run, and how they stop.

==========================  ===========================================================
module                      concept
==========================  ===========================================================
:mod:`.workers`             where concurrent calls run and how they stop: daemon worker
                            threads for blocking calls and their gate; coroutines run
                            together, one failure cancelling the others
:mod:`.step_driver`         a flow written once as steps, run by a sync or an async driver
==========================  ===========================================================
"""
