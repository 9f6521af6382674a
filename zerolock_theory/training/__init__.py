"""Training: one loop, two step objects (ZeroLock, backprop), checkpointed state."""
