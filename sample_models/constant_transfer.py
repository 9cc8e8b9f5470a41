"""XF006 constant-transfer: a weight the partitioner leaves outside its GPU delegate.

The partitioner hands `mm` to a cuda:0 delegate but does not absorb the weight into it
(`absorb_constants=False`: no `tag_constant_data`), so ExecuTorch copies the 16 KiB weight
host-to-device in front of the delegate on every call.

ExecuTorch 1.5.1's `to_executorch` cannot even emit that copy (it fails with `'NoneType'
object has no attribute 'nbytes'`, which xferlint explains when an entry point raises it).
This sample therefore gives two programs: `edge`, the program before `to_executorch`
(xferlint runs ExecuTorch's own PropagateDevicePass on a copy to see the copies), and
`workaround`, the program a pipeline gets by marking such copies as planned buffers in a
`to_out_var_pass` hook. Expect one XF006 in each. The nearest negative twin is
constant_absorbed.py.
"""

import torch
from executorch.exir import ExecutorchBackendConfig
from executorch.exir.passes import ToOutVarPass

from xferlint.testing import DevicePartitioner, PlanConstantCopies, ThenPass, lower


class Classifier(torch.nn.Module):
    def __init__(self, features: int = 64) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mm(x, self.weight)  # cuda:0, the weight stays outside the delegate


def _lower(**kwargs):
    partitioner = DevicePartitioner(["cuda:0"], absorb_constants=False)
    return lower(Classifier(), (torch.randn(8, 64),), devices=["cuda:0"], partitioner=partitioner, **kwargs)


def program():
    hook = ThenPass(PlanConstantCopies(), ToOutVarPass(ignore_to_out_var_failure=False))
    return {
        "edge": _lower(to_executorch=False),
        "workaround": _lower(backend_config=ExecutorchBackendConfig(to_out_var_pass=hook)),
    }
