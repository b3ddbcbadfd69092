"""Writes docs/reference/api.md, the API reference, from the API's .proto files under proto/.

protoc (grpc_tools, a dependency of the package) compiles the files into descriptors with
their source info, so every service, RPC, message, field, enum and value comes with the
comment written above it in the proto. The page is generated, committed and never edited by
hand: ``make proto`` writes it, and ``make docs`` (part of ``make lint``) runs this script
with ``--check``, which fails when the committed page differs from what proto/ gives.

Usage: ``python scripts/proto_reference.py [--check]`` from anywhere in the repository.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from google.protobuf import descriptor_pb2 as d
from grpc_tools import protoc  # type: ignore[import-untyped]  # no stubs; main() is all we use

ROOT = Path(__file__).resolve().parents[1]
PROTO_DIR = ROOT / "proto"
OUTPUT = ROOT / "docs" / "reference" / "api.md"
WELL_KNOWN_TYPES = "https://protobuf.dev/reference/protobuf/google.protobuf/"

# Field numbers of the descriptor messages, for SourceCodeInfo.Location paths.
FILE_PACKAGE, FILE_MESSAGE, FILE_ENUM, FILE_SERVICE = 2, 4, 5, 6
MESSAGE_FIELD, MESSAGE_NESTED, MESSAGE_ENUM, MESSAGE_ONEOF = 2, 3, 4, 8
ENUM_VALUE = 2
SERVICE_METHOD = 2

SCALARS = {
    d.FieldDescriptorProto.TYPE_DOUBLE: "double",
    d.FieldDescriptorProto.TYPE_FLOAT: "float",
    d.FieldDescriptorProto.TYPE_INT64: "int64",
    d.FieldDescriptorProto.TYPE_UINT64: "uint64",
    d.FieldDescriptorProto.TYPE_INT32: "int32",
    d.FieldDescriptorProto.TYPE_FIXED64: "fixed64",
    d.FieldDescriptorProto.TYPE_FIXED32: "fixed32",
    d.FieldDescriptorProto.TYPE_BOOL: "bool",
    d.FieldDescriptorProto.TYPE_STRING: "string",
    d.FieldDescriptorProto.TYPE_BYTES: "bytes",
    d.FieldDescriptorProto.TYPE_UINT32: "uint32",
    d.FieldDescriptorProto.TYPE_SFIXED32: "sfixed32",
    d.FieldDescriptorProto.TYPE_SFIXED64: "sfixed64",
    d.FieldDescriptorProto.TYPE_SINT32: "sint32",
    d.FieldDescriptorProto.TYPE_SINT64: "sint64",
}


#: The API's protos, under PROTO_DIR. The task-host protocol beside them
#: (``connect_grpc/host/v1``), which a worker speaks with its own JVM hosts, is no part of
#: the API: its proto's comments document it.
API_DIR = Path("connect_grpc") / "v1"


def descriptors(proto_dir: Path = PROTO_DIR) -> list[d.FileDescriptorProto]:
    """The descriptors of every .proto file of the API under ``proto_dir``, with their
    comments."""
    files = sorted(
        str(path.relative_to(proto_dir)) for path in (proto_dir / API_DIR).rglob("*.proto")
    )
    if not files:
        raise SystemExit(f"no .proto file under {proto_dir}")
    well_known = resources.files("grpc_tools") / "_proto"
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "descriptors.pb"
        code = protoc.main([
            "protoc", f"-I{proto_dir}", f"-I{well_known}", "--include_source_info",
            f"--descriptor_set_out={out}", *files,
        ])
        if code != 0:
            raise SystemExit(f"protoc failed on {proto_dir} (exit code {code})")
        found = d.FileDescriptorSet.FromString(out.read_bytes())
    return list(found.file)


# --------------------------------------------------------------------------------------------
# comments


@dataclass(frozen=True, slots=True)
class Comments:
    """The comments of one file, by the path of the element they stand above."""

    by_path: dict[tuple[int, ...], str]

    @classmethod
    def of(cls, file: d.FileDescriptorProto) -> Comments:
        return cls({
            tuple(location.path): location.leading_comments or location.trailing_comments
            for location in file.source_code_info.location
            if location.leading_comments or location.trailing_comments
        })

    def paragraphs(self, *path: int) -> list[str]:
        """The comment as paragraphs, each on one line. A ``---- Title ----`` line (a group
        heading in the proto) is a paragraph of its own, without its dashes."""
        paragraphs: list[str] = []
        current: list[str] = []
        for raw in self.by_path.get(path, "").splitlines():
            line = raw.strip()
            title = re.fullmatch(r"-{2,}\s*(.*?)\s*-{2,}", line)
            if not line or title:
                if current:
                    paragraphs.append(" ".join(current))
                current = []
                if title:
                    paragraphs.append(title.group(1))
                continue
            current.append(line)
        if current:
            paragraphs.append(" ".join(current))
        return paragraphs

    def block(self, *path: int) -> str:
        """The comment as markdown paragraphs, or the empty string."""
        return "\n\n".join(prose(paragraph) for paragraph in self.paragraphs(*path))

    def cell(self, *path: int) -> str:
        """The comment in one table cell."""
        return "<br><br>".join(prose(p, in_table=True) for p in self.paragraphs(*path))


def prose(text: str, in_table: bool = False) -> str:
    """Comment text as markdown: code spans kept, every other character that markdown would
    read as markup escaped (``<group.id>`` stays text, ``__connect`` is not bold)."""
    parts = re.split(r"(`[^`]*`)", text)
    escaped = []
    for index, part in enumerate(parts):
        if index % 2 == 1:  # a code span
            escaped.append(part.replace("|", "\\|") if in_table else part)
            continue
        part = part.replace("\\", "\\\\").replace("&", "&amp;")
        part = part.replace("<", "&lt;").replace(">", "&gt;")
        part = re.sub(r"([*\[\]])", r"\\\1", part)
        part = re.sub(r"_+", _underscores, part)
        if in_table:
            part = part.replace("|", "\\|")
        escaped.append(part)
    result = "".join(escaped)
    return "\\" + result if result.startswith(("#", "+", "-")) else result


def _underscores(run: re.Match[str]) -> str:
    """A run of underscores as it is inside a word (``expand_info``), where markdown reads it
    as text; escaped anywhere else (``__connect``), where it could start emphasis."""
    text = run.string
    before = text[run.start() - 1] if run.start() > 0 else " "
    after = text[run.end()] if run.end() < len(text) else " "
    if before.isalnum() and after.isalnum():
        return run.group(0)
    return "\\_" * len(run.group(0))


# --------------------------------------------------------------------------------------------
# names and anchors


def slug(heading: str) -> str:
    """The anchor MkDocs (and GitHub) give a heading of plain words and dots."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@dataclass(frozen=True, slots=True)
class Names:
    """Where each type of the documented package is described, by its full name."""

    local: dict[str, str]
    map_entries: dict[str, d.DescriptorProto]

    def link(self, type_name: str) -> str:
        full = type_name.lstrip(".")
        if full in self.local:
            shown = self.local[full]
            return f"[{shown}](#{slug(shown)})"
        if full.startswith("google.protobuf."):
            return f"[`{full}`]({WELL_KNOWN_TYPES})"
        return f"`{full}`"

    def field_type(self, field: d.FieldDescriptorProto) -> str:
        if field.type_name.lstrip(".") in self.map_entries:
            entry = self.map_entries[field.type_name.lstrip(".")]
            key, value = entry.field
            return f"map of {self.field_type(key)} to {self.field_type(value)}"
        base = (self.link(field.type_name) if field.type_name
                else f"`{SCALARS[field.type]}`")
        if field.label == d.FieldDescriptorProto.LABEL_REPEATED:
            return f"repeated {base}"
        if field.proto3_optional:
            return f"optional {base}"
        return base


def _walk(
    prefix: str, shown: str, messages: Sequence[d.DescriptorProto], path: tuple[int, ...],
    nested_field: int,
) -> Iterator[tuple[str, str, d.DescriptorProto, tuple[int, ...]]]:
    """(full name, shown name, message, location path) of every message, nested ones after
    their parent; map entries included."""
    for index, message in enumerate(messages):
        full = f"{prefix}.{message.name}" if prefix else message.name
        name = f"{shown}.{message.name}" if shown else message.name
        here = (*path, nested_field, index)
        yield full, name, message, here
        yield from _walk(full, name, message.nested_type, here, MESSAGE_NESTED)


# --------------------------------------------------------------------------------------------
# the page


def _names(files: Sequence[d.FileDescriptorProto]) -> Names:
    local: dict[str, str] = {}
    map_entries: dict[str, d.DescriptorProto] = {}
    for file in files:
        for full, shown, message, _ in _walk(file.package, "", file.message_type, (),
                                             FILE_MESSAGE):
            if message.options.map_entry:
                map_entries[full] = message
                continue
            local[full] = shown
            for enum in message.enum_type:
                local[f"{full}.{enum.name}"] = f"{shown}.{enum.name}"
        for enum in file.enum_type:
            local[f"{file.package}.{enum.name}"] = enum.name
        for service in file.service:
            local[f"{file.package}.{service.name}"] = service.name
    return Names(local, map_entries)


def render(files: Sequence[d.FileDescriptorProto]) -> str:
    """The page, for the files of ``files`` that are under proto/ (not their imports)."""
    documented = [f for f in files if (PROTO_DIR / f.name).exists()]
    names = _names(documented)

    lines = [
        "# API reference",
        "",
        "<!-- Generated from proto/ by scripts/proto_reference.py (`make proto`); do not edit. -->",
        "",
        "Generated from the proto files by `scripts/proto_reference.py`: every service, RPC,",
        "message, field, enum and value, with the comment the proto gives it. How the API",
        "behaves as a whole (errors, retries, etags, request ids) is in",
        "[The gRPC API and its clients](../clients.md) and [Operations](../operations.md).",
        "",
    ]
    for file in documented:
        comments = Comments.of(file)
        lines += [f"Source: `proto/{file.name}`, package `{file.package}`.", ""]
        if intro := comments.block(FILE_PACKAGE):
            lines += [intro, ""]
    lines += ["## Services", ""]
    for file in documented:
        lines += _services(file, Comments.of(file), names)
    lines += ["## Messages", ""]
    for file in documented:
        lines += _messages(file, Comments.of(file), names)
    lines += ["## Enums", ""]
    for file in documented:
        comments = Comments.of(file)
        for index, enum in enumerate(file.enum_type):
            lines += _enum(enum.name, enum, comments, (FILE_ENUM, index))
    text = "\n".join(lines).rstrip("\n") + "\n"
    _check_anchors(text)
    return text


def _services(file: d.FileDescriptorProto, comments: Comments, names: Names) -> list[str]:
    lines: list[str] = []
    for s_index, service in enumerate(file.service):
        path = (FILE_SERVICE, s_index)
        lines += [f"### {service.name}", ""]
        if intro := comments.block(*path):
            lines += [intro, ""]
        lines += ["| RPC | Request | Response |", "|---|---|---|"]
        for method in service.method:
            heading = f"{service.name}.{method.name}"
            lines.append(f"| [{method.name}](#{slug(heading)}) | {_stream(method, True, names)} "
                         f"| {_stream(method, False, names)} |")
        lines.append("")
        for m_index, method in enumerate(service.method):
            lines += [f"#### {service.name}.{method.name}", ""]
            lines += [f"{_stream(method, True, names)} → {_stream(method, False, names)}", ""]
            if text := comments.block(*path, SERVICE_METHOD, m_index):
                lines += [text, ""]
    return lines


def _stream(method: d.MethodDescriptorProto, request: bool, names: Names) -> str:
    streaming = method.client_streaming if request else method.server_streaming
    link = names.link(method.input_type if request else method.output_type)
    return f"stream {link}" if streaming else link


def _messages(file: d.FileDescriptorProto, comments: Comments, names: Names) -> list[str]:
    lines: list[str] = []
    for _, shown, message, path in _walk(file.package, "", file.message_type, (), FILE_MESSAGE):
        if message.options.map_entry:
            continue
        lines += [f"### {shown}", ""]
        if intro := comments.block(*path):
            lines += [intro, ""]
        if message.field:
            lines += ["| Field | No. | Type | Description |", "|---|---|---|---|"]
            for index, field in enumerate(message.field):
                description = comments.cell(*path, MESSAGE_FIELD, index)
                if field.HasField("oneof_index") and not field.proto3_optional:
                    oneof = message.oneof_decl[field.oneof_index]
                    description = f"One of `{oneof.name}`. {description}".rstrip()
                lines.append(f"| `{field.name}` | {field.number} | {names.field_type(field)} "
                             f"| {description} |")
            lines.append("")
        else:
            lines += ["No fields.", ""]
        for o_index, oneof in enumerate(message.oneof_decl):
            text = comments.block(*path, MESSAGE_ONEOF, o_index)
            members = [f.name for f in message.field
                       if f.HasField("oneof_index") and f.oneof_index == o_index]
            if text and not all(f.proto3_optional for f in message.field
                                if f.name in members):
                listed = ", ".join(f"`{member}`" for member in members)
                lines += [f"`{oneof.name}` (one of {listed}): {text}", ""]
        for e_index, enum in enumerate(message.enum_type):
            lines += _enum(f"{shown}.{enum.name}", enum, comments,
                           (*path, MESSAGE_ENUM, e_index))
    return lines


def _enum(
    shown: str, enum: d.EnumDescriptorProto, comments: Comments, path: tuple[int, ...]
) -> list[str]:
    lines = [f"### {shown}", ""]
    if intro := comments.block(*path):
        lines += [intro, ""]
    lines += ["| Value | No. | Description |", "|---|---|---|"]
    for index, value in enumerate(enum.value):
        lines.append(f"| `{value.name}` | {value.number} "
                     f"| {comments.cell(*path, ENUM_VALUE, index)} |")
    return [*lines, ""]


def _check_anchors(text: str) -> None:
    """Every heading's anchor is unique, and every in-page link names one."""
    headings = [slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")]
    duplicates = {anchor for anchor in headings if headings.count(anchor) > 1}
    if duplicates:
        raise SystemExit(f"headings with the same anchor: {sorted(duplicates)}")
    missing = set(re.findall(r"\]\(#([^)]+)\)", text)) - set(headings)
    if missing:
        raise SystemExit(f"links to no heading: {sorted(missing)}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help=f"fail if {OUTPUT.relative_to(ROOT)} differs from what proto/ gives")
    args = parser.parse_args(argv)
    text = render(descriptors())
    shown = OUTPUT.relative_to(ROOT)
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_text(encoding="utf-8") != text:
            sys.stderr.write(f"{shown} drifted from proto/: run `make proto`\n")
            return 1
        sys.stdout.write(f"{shown} matches proto/\n")
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    sys.stdout.write(f"generated {shown} from proto/\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
