"""Every transforms test runs on both crop-decode paths: the compiled crop
decoder (skipped where it is not built) and the pure-Python one."""

from __future__ import annotations

import pytest

from fastdata.decode import native


@pytest.fixture(autouse=True, params=["compiled", "python"])
def crop_decoder(request, monkeypatch):
    if request.param == "compiled" and not native.native_available():
        pytest.skip(f"compiled crop decoder not built: {native.native_status()}")
    monkeypatch.setattr(native, "_disabled", request.param == "python")
    return request.param
