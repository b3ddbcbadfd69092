"""Java SimpleDateFormat patterns in UTC, as TimestampConverter and TimestampRouter use them."""

from __future__ import annotations

import datetime as dt

import pytest

from connect_grpc.data.transforms._dateformat import JavaDateFormat, PatternError

MOMENT = dt.datetime(2023, 11, 4, 22, 13, 20, 45_000, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("yyyy-MM-dd", "2023-11-04"),
        ("yyyyMMdd", "20231104"),
        ("yy-M-d", "23-11-4"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'", "2023-11-04T22:13:20.045Z"),
        ("EEE, d MMM yyyy HH:mm:ss Z", "Sat, 4 Nov 2023 22:13:20 +0000"),
        ("EEEE MMMM dd G", "Saturday November 04 AD"),
        ("hh:mm a", "10:13 PM"),
        ("k K D u", "22 10 308 6"),
        ("yyyy-MM-dd'T'HH:mm:ssXXX z", "2023-11-04T22:13:20Z UTC"),
        ("'o''clock' ''HH''", "o'clock '22'"),
    ],
)
def test_formats_in_utc(pattern: str, expected: str) -> None:
    assert JavaDateFormat(pattern).format(MOMENT) == expected


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("yyyy-MM-dd", "2023-11-04", dt.datetime(2023, 11, 4, tzinfo=dt.UTC)),
        ("yyyyMMddHHmm", "202311042213", dt.datetime(2023, 11, 4, 22, 13, tzinfo=dt.UTC)),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2023-11-04T22:13:20.045+01:00",
         dt.datetime(2023, 11, 4, 21, 13, 20, 45_000, tzinfo=dt.UTC)),
        ("dd MMM yyyy hh a", "04 nov 2023 12 AM", dt.datetime(2023, 11, 4, tzinfo=dt.UTC)),
        ("HH:mm", "10:30", dt.datetime(1970, 1, 1, 10, 30, tzinfo=dt.UTC)),
        # lenient, as Java: month 13 rolls into the next year; trailing text is ignored
        ("yyyy-MM-dd", "2023-13-01 trailing", dt.datetime(2024, 1, 1, tzinfo=dt.UTC)),
    ],
)
def test_parses_in_utc(pattern: str, text: str, expected: dt.datetime) -> None:
    assert JavaDateFormat(pattern).parse(text) == expected


def test_round_trips_epoch_millis() -> None:
    fmt = JavaDateFormat("yyyy-MM-dd HH:mm:ss.SSS")
    assert fmt.format_millis(86_400_000) == "1970-01-02 00:00:00.000"
    assert fmt.parse_millis("1970-01-02 00:00:00.001") == 86_400_001


def test_refuses_what_it_cannot_parse() -> None:
    with pytest.raises(ValueError, match='Unparseable date: "nope"'):
        JavaDateFormat("yyyy").parse("nope")


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("yyyy-bb", "Illegal pattern character 'b'"),
        ("YYYY", "pattern letter 'Y' \\(week-based\\) is not supported"),
        ("yyyy 'T", "Unterminated quote"),
    ],
)
def test_refuses_patterns(pattern: str, message: str) -> None:
    with pytest.raises(PatternError, match=message):
        JavaDateFormat(pattern)
