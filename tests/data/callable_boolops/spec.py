from verifier.spec import CallableKernel, dtypes


def _row_sum(inputs, outputs, params, dt):
    from rowsum_pyand import row_sum  # the library's function, its kernel in the library's own file

    row_sum(inputs["x"], outputs["y"])


KERNELS = [CallableKernel(name="callable-rowsum-python-and", op="reduce_sum", fn=_row_sum, dtypes=[dtypes("f32")],
                          supports=lambda M, N, dt: None if N <= 4096 else "N > 4096")]


def _row_sum_float_arg(inputs, outputs, params, dt):
    from rowsum_float_arg import row_sum

    row_sum(inputs["x"], outputs["y"])


KERNELS.append(CallableKernel(name="callable-rowsum-float-arg", op="reduce_sum", fn=_row_sum_float_arg,
                              dtypes=[dtypes("f32")], supports=lambda M, N, dt: None if N <= 4096 else "N > 4096"))


def _row_sum_walrus(inputs, outputs, params, dt):
    from rowsum_walrus import row_sum  # `and` with a walrus: left to Python, still an interpreter gap

    row_sum(inputs["x"], outputs["y"])


KERNELS.append(CallableKernel(name="callable-rowsum-walrus-and", op="reduce_sum", fn=_row_sum_walrus,
                              dtypes=[dtypes("f32")], supports=lambda M, N, dt: None if N <= 4096 else "N > 4096"))
