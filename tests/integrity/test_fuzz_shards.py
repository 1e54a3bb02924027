"""The fuzz harness in CI: a few dozen mutants per format of datasets
fastdata wrote, and payload flips in foreign shards after ``fastdata index
--checksums``; the full run is ``python tests/integrity/fuzz_shards.py``."""

from __future__ import annotations

import pytest
from fuzz_shards import ALLOWED, foreign, fuzz

from fastdata.formats import registry


@pytest.mark.parametrize("fmt", registry.names())
def test_every_mutant_reads_clean_or_fails_naming_the_file(tmp_path, fmt):
    result = fuzz(fmt, 15, seed=7, scratch=tmp_path)
    assert not result["failures"], result["failures"][:3]
    assert result["verify_missed"] == 0, result["missed"][:3]
    assert set(result["outcomes"]) <= set(ALLOWED) and result["outcomes"].get("named", 0) >= 5


def test_payload_flips_in_foreign_shards_are_found_after_index_checksums(tmp_path, shared_data):
    for result in foreign(tmp_path, shared_data, 8, seed=3):
        assert set(result["outcomes"]) <= set(ALLOWED), result
        assert result["outcomes"].get("named", 0) >= 6, result
