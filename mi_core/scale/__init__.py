"""Scale-out helpers: the task engine (local or Ray actors) and torchrun / DistributedDataParallel helpers."""
