"""The MaxKernel worker (tpu/worker/maxkernel_worker.py is its entry): the protocol, the ops,
the judge and the candidate's sandbox, the task model, the cost model, the TPU compiler and the
kernel generator, one subpackage each (docs/worker-protocol.md). `common` and `scratch` are what
every part shares."""
