import svc_frames


def test_package_imports() -> None:
    assert svc_frames.__version__
