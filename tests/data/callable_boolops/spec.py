from verifier.spec import CallableKernel, dtypes


def _row_sum(inputs, outputs, params, dt):
    from rowsum_pyand import row_sum  # the library's function, its kernel in the library's own file

    row_sum(inputs["x"], outputs["y"])


KERNELS = [CallableKernel(name="callable-rowsum-python-and", op="reduce_sum", fn=_row_sum, dtypes=[dtypes("f32")],
                          supports=lambda M, N, dt: None if N <= 4096 else "N > 4096")]
