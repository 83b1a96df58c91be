"""svc_frames.errors: one hierarchy, listed explicitly, and every exception of the package
under its root (the server's ApiError, an HTTP answer in the making, is the one exception);
warnings under theirs (SvcWarning)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import svc_frames
from svc_frames import errors

# Exceptions that are not errors for a user to catch, each with its reason in errors.py
# (ApiError) or at its definition (private signals of the emulator).
# the local service's own answers in the making, never raised to a toolkit caller
NOT_UNDER_ROOT = {"ApiError", "_DroppedConnection", "LoginRefused",
                  # a KeyboardInterrupt: `except Exception` must not swallow a Ctrl-C
                  "WriteInterrupted"}


def test_all_is_an_explicit_list_of_every_error_class() -> None:
    assert isinstance(errors.__all__, list)
    defined = {name for name, obj in vars(errors).items()
               if inspect.isclass(obj) and issubclass(obj, BaseException)
               and obj.__module__ == errors.__name__}
    # beside the classes, the one function every warning of the package is given with
    assert set(errors.__all__) == defined | {"warn_user"}


def test_every_exception_of_the_package_is_under_the_root() -> None:
    strays = []
    for mod in pkgutil.walk_packages(svc_frames.__path__, "svc_frames."):
        module = importlib.import_module(mod.name)
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseException)
                    and obj.__module__ == module.__name__
                    and not issubclass(obj, (errors.SvcError, errors.SvcWarning))
                    and name not in NOT_UNDER_ROOT):
                strays.append(f"{module.__name__}.{name}")
    assert strays == []


def test_errors_found_before_a_request_are_value_errors_and_usage_errors() -> None:
    for cls in (errors.ConfigurationError, errors.InvalidValue, errors.SchemaError):
        assert issubclass(cls, errors.UsageError) and issubclass(cls, ValueError)
