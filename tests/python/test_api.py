"""The package's surface: every public function, class and method has a
docstring, and the type stubs ship with it."""
import inspect
import pathlib

import xylem


def public(obj):
    return [(name, getattr(obj, name)) for name in dir(obj) if not name.startswith("_")]


def test_docstrings():
    missing = []
    for module in (xylem, xylem.blas, xylem.nn, xylem.optim):
        for name, value in public(module):
            if callable(value) and not (value.__doc__ or "").strip():
                missing.append(f"{module.__name__}.{name}")
            if inspect.isclass(value) and not issubclass(value, BaseException):
                for member, attr in public(value):
                    if callable(attr) and not inspect.isclass(attr) and not (attr.__doc__ or "").strip():
                        missing.append(f"{module.__name__}.{name}.{member}")
    assert not missing, missing


def test_stubs_ship():
    folder = pathlib.Path(xylem.__file__).parent
    for stub in ("_xylem/__init__.pyi", "_xylem/blas.pyi", "_xylem/nn.pyi", "_xylem/optim.pyi"):
        text = (folder / stub).read_text()
        assert "def " in text, stub
    assert (folder / "py.typed").exists()
    assert "def matmul(" in (folder / "_xylem/__init__.pyi").read_text()


def test_every_op_is_bound():
    # Each op set's public functions, as the C++ headers name them.
    math_ops = "exp log sqrt rsqrt abs neg sin cos clamp add sub mul div pow maximum minimum eq ne lt le gt ge " \
               "where cast sum mean max min argmax argmin var zeros ones full arange uniform normal fill " \
               "fill_uniform fill_normal contiguous matmul asarray index_select gather scatter scatter_add one_hot " \
               "concatenate stack split chunk pad permute transpose"
    blas_ops = "asum dot nrm2 iamax axpy copy scal swap rot gemv gemm"
    nn_ops = "sigmoid relu tanh leaky_relu elu gelu softplus sigmoid_grad relu_grad tanh_grad leaky_relu_grad " \
             "elu_grad gelu_grad softplus_grad softmax log_softmax softmax_grad log_softmax_grad layer_norm " \
             "layer_norm_grad batch_norm batch_norm_grad conv2d_output_shape conv2d conv2d_grad_data " \
             "conv2d_grad_filter pool2d_output_shape max_pool2d max_pool2d_grad avg_pool2d avg_pool2d_grad lrn " \
             "lrn_grad dropout dropout_grad linear linear_grad cross_entropy cross_entropy_grad mse_loss mse_loss_grad " \
             "embedding embedding_backward " \
             "silu gelu_tanh silu_grad gelu_tanh_grad rms_norm rms_norm_grad group_norm group_norm_grad instance_norm " \
             "instance_norm_grad kl_div kl_div_grad"
    optim_ops = "sgd_step adam_step SgdOptions AdamOptions"
    for module, names in ((xylem, math_ops), (xylem.blas, blas_ops), (xylem.nn, nn_ops),
                          (xylem.optim, optim_ops)):
        for name in names.split():
            assert callable(getattr(module, name, None)), f"{module.__name__}.{name}"
