"""AIP-158 paging of ListConnectors: sizes, tokens bound to their query, stable order."""

from __future__ import annotations

import pytest

from connect_grpc.api.paging import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    PageRequest,
    answer_budget,
)
from connect_grpc.kernel.errors import InvalidArgumentError

NAMES = ["a", "b", "c", "d"]


def test_sizes_default_and_coerce() -> None:
    assert PageRequest.parse(0, "", "q").size == DEFAULT_PAGE_SIZE
    assert PageRequest.parse(5, "", "q").size == 5
    assert PageRequest.parse(10**6, "", "q").size == MAX_PAGE_SIZE


def test_a_negative_size_is_invalid() -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        PageRequest.parse(-1, "", "q")
    assert caught.value.violations[0].field == "page_size"


def test_a_token_continues_after_the_last_name_even_if_it_was_deleted() -> None:
    first = PageRequest.parse(2, "", "q")
    token = first.token_after("b")
    following = PageRequest.parse(2, token, "q")
    assert following.candidates(NAMES) == ["c", "d"]
    assert following.candidates(["a", "c", "d"]) == ["c", "d"]


@pytest.mark.parametrize("token", ["!!", "e30=", "bm90IGpzb24=", "é"])
def test_a_foreign_token_is_invalid(token: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        PageRequest.parse(2, token, "q")
    assert caught.value.violations[0].field == "page_token"


def test_a_token_for_another_query_is_invalid() -> None:
    token = PageRequest.parse(2, "", "status=True").token_after("a")
    with pytest.raises(InvalidArgumentError, match="other fields"):
        PageRequest.parse(2, token, "status=False")


def test_the_budget_fits_a_default_client() -> None:
    assert answer_budget(100 * 1024 * 1024) < 4 * 1024 * 1024
    assert answer_budget(1024 * 1024) < 1024 * 1024
