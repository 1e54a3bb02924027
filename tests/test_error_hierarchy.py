import pickle
import subprocess
import sys

import pytest

import fastdata
from fastdata._optional import require
from fastdata.errors import FastDataError, FormatError, MissingDependencyError


def test_format_error_names_file_offset_key_and_survives_pickling():
    err = FormatError("bad magic", path="/d/shard-00001.rec", offset=4096, key=17, hint="re-run fastdata index")
    text = str(err)
    for part in ("/d/shard-00001.rec", "byte offset 4096", "key 17", "bad magic", "re-run fastdata index"):
        assert part in text
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is FormatError and str(back) == text and back.offset == 4096


def test_missing_optional_dependency_names_the_extra():
    with pytest.raises(MissingDependencyError, match=r"pip install 'fastdata\[turbo\]'") as info:
        require("no_such_module_fastdata_test", extra="turbo", purpose="JPEG decoding")
    assert isinstance(info.value, FastDataError) and isinstance(info.value, ImportError)


def test_import_fastdata_pulls_in_no_optional_backend():
    code = (
        "import sys, fastdata\n"
        "heavy = [m for m in ('turbojpeg', 'simplejpeg', 'nvidia.dali', 'cv2', 'lmdb', 'matplotlib') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_public_names_resolve_and_all_is_sorted():
    assert fastdata.__all__ == sorted(fastdata.__all__)
    with pytest.raises(AttributeError):
        fastdata.no_such_name  # noqa: B018
