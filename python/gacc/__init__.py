"""gacc: gradient accumulation as an MLIR pass pipeline.

`gacc.torch` exports PyTorch training steps into gacc's input contract and
compiles them (see gacc/torch.py).
"""

__version__ = "0.1"
