"""`gradloom.distributed`: differentiable domain decomposition over torch.distributed — halo
exchange, all-reduce and broadcast of gradloom arrays, recorded on `wp.Tape` with their adjoint
communication (docs/distributed.md).

Nothing in gradloom imports this package: `import gradloom` loads neither it nor torch. Use::

    import gradloom.distributed as gd
    comm = gd.init()                       # torchrun's process group (gloo), or one process
    slabs = comm.slabs((ny, nx), axis=0, width=1, periodic=True)
    u = slabs.scatter(u_global, dtype=wp.float64, requires_grad=True)
    with tape:
        slabs.halo_exchange(u)             # the adjoint sends ghost gradients back
        ...
        loss = comm.all_reduce(local_loss, adjoint="replicated")
"""

from .communicator import Communicator, init
from .slabs import SlabDecomposition, split
from .tensors import DistributedError
from .transport import DEFAULT_TIMEOUT

__all__ = ["DEFAULT_TIMEOUT", "Communicator", "DistributedError", "SlabDecomposition", "init",
           "split"]
