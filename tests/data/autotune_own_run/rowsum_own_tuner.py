"""A library autotuner that subclasses Triton's Autotuner and overrides ``run`` (its own cache and benchmark policy,
as FlagGems' LibTuner does): it benchmarks when it holds more than one config, else launches its one config. The
row sum's BLOCK=32 config has no loop over the row, so rows past 32 columns are wrong under it. The verifier pins
Triton's Autotuner.run; a subclass's own run never reaches it, so before the fix the CPU run tried to benchmark and a
GPU run checked the fastest config in every "config i of 2" (tests/test_autotune_own_run.py)."""
import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner


class OwnTuner(Autotuner):
    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        if len(self.configs) > 1:
            timings = {c: self._bench(*args, config=c, **kwargs) for c in self.configs}
            config = min(timings, key=timings.get)
        else:
            config = self.configs[0]
        self.best_config = config
        ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
        self.nargs = None
        return ret


def own_tune(configs, key):
    return lambda fn: OwnTuner(fn, fn.arg_names, configs, key, None, None)


@own_tune(configs=[triton.Config({"BLOCK": 4096}, num_warps=4), triton.Config({"BLOCK": 32}, num_warps=1)],
          key=["N"])
@triton.jit
def _rowsum(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(x, axis=0).to(y_ptr.dtype.element_ty))


def launch(inputs, outputs, params, dt):
    x = inputs["x"]
    _rowsum[(x.shape[0],)](x, outputs["y"], x.shape[1], x.stride(0))
