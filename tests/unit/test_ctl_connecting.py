"""How connect-grpc ctl reaches a worker: TLS files and token files in contexts (the
format, old files included), the settings built from flags, environment and context, and
every bad file or token refused as a usage error naming the flag, before any call."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from connect_grpc.client.connection import ConnectionSettings, TlsOptions
from connect_grpc.ctl.connecting import TOKEN_ENV, ConnectionOptions, connection_settings
from connect_grpc.ctl.contexts import CONFIG_DIR_ENV, ContextsFile, Credentials
from connect_grpc.ctl.root import ctl
from connect_grpc.kernel.errors import InvalidArgumentError

TOKEN = "t0ken-" + "x" * 20
OTHER_TOKEN = "other-" + "y" * 20
#: Nothing listens there: a command that got as far as calling it would exit 7, not 2.
NOWHERE = "127.0.0.1:9"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """ca.pem, me.pem, me.key (PEM-shaped), plain.txt (not PEM), ops.token, bad.token."""
    directory = tmp_path / "files"
    directory.mkdir()
    for name in ("ca.pem", "me.pem", "me.key", "other-ca.pem"):
        (directory / name).write_text(f"-----BEGIN X-----\n{name}\n-----END X-----\n")
    (directory / "plain.txt").write_text("not a certificate\n")
    (directory / "ops.token").write_text(f"{TOKEN}\n")
    (directory / "bad.token").write_text("has spaces in it, so no header\n")
    (directory / "empty.token").write_text("\n")
    return directory


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "cfg"))
    monkeypatch.delenv("CONNECT_GRPC_TARGET", raising=False)
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    return tmp_path / "cfg" / "contexts.json"


def secure(files: Path, token_file: str | None = "ops.token") -> Credentials:
    return Credentials(
        tls=True, ca_file=files / "ca.pem", cert_file=files / "me.pem",
        key_file=files / "me.key", server_name="connect.example.com",
        token_file=files / token_file if token_file else None,
    )


def save_contexts(path: Path, **contexts: tuple[str, Credentials]) -> None:
    stored = ContextsFile.load(path)
    for name, (target, credentials) in contexts.items():
        stored.set_context(name, target, credentials)
    stored.save()


def settings(options: ConnectionOptions, environ: dict[str, str] | None = None
             ) -> ConnectionSettings:
    return connection_settings(options, environ or {})


# ---------------------------------------------------------------------------- the file format


def test_credentials_round_trip_through_the_file_as_paths(files: Path, tmp_path: Path) -> None:
    path = tmp_path / "contexts.json"
    save_contexts(path, prod=("prod:8443", secure(files)), dev=("dev:8083", Credentials()))

    document = json.loads(path.read_text())
    assert document["contexts"]["prod"] == {
        "target": "prod:8443",
        "tls": {"ca-file": str(files / "ca.pem"), "cert-file": str(files / "me.pem"),
                "key-file": str(files / "me.key"), "server-name": "connect.example.com"},
        "token-file": str(files / "ops.token"),
    }
    assert document["contexts"]["dev"] == {"target": "dev:8083"}
    assert TOKEN not in path.read_text()
    loaded = ContextsFile.load(path)
    assert loaded.get("prod").credentials == secure(files)
    assert loaded.get("dev").credentials == Credentials()


def test_tls_with_system_roots_is_an_empty_tls_object(tmp_path: Path) -> None:
    path = tmp_path / "contexts.json"
    save_contexts(path, cloud=("cloud:443", Credentials(tls=True)))
    assert json.loads(path.read_text())["contexts"]["cloud"] == {"target": "cloud:443", "tls": {}}
    assert ContextsFile.load(path).get("cloud").credentials == Credentials(tls=True)


def test_a_version_1_file_without_the_keys_loads_as_plaintext(tmp_path: Path) -> None:
    path = tmp_path / "contexts.json"
    path.write_text(json.dumps({"version": 1, "current-context": "local",
                                "contexts": {"local": {"target": "localhost:8083"}}}))
    context = ContextsFile.load(path).get("local")
    assert (context.target, context.credentials, context.settings) == (
        "localhost:8083", Credentials(), {})


def test_set_context_replaces_tls_and_token_and_keeps_unknown_keys(
    files: Path, tmp_path: Path
) -> None:
    path = tmp_path / "contexts.json"
    save_contexts(path, prod=("prod:8443", secure(files)))
    document = json.loads(path.read_text())
    document["contexts"]["prod"]["keepalive"] = {"time-s": 30}
    path.write_text(json.dumps(document))

    save_contexts(path, prod=("prod:8083", Credentials()))

    assert json.loads(path.read_text())["contexts"]["prod"] == {
        "target": "prod:8083", "keepalive": {"time-s": 30}}


@pytest.mark.parametrize(
    ("context", "field"),
    [
        ({"tls": "yes"}, "contexts.a.tls"),
        ({"tls": {"ca-file": 3}}, "contexts.a.tls.ca-file"),
        ({"tls": {"server-name": ""}}, "contexts.a.tls.server-name"),
        ({"token-file": ["/t"]}, "contexts.a.token-file"),
    ],
)
def test_a_malformed_tls_or_token_key_names_the_field(
    tmp_path: Path, context: dict[str, object], field: str
) -> None:
    path = tmp_path / "contexts.json"
    path.write_text(json.dumps({"contexts": {"a": {"target": "a:1", **context}}}))
    with pytest.raises(InvalidArgumentError) as caught:
        ContextsFile.load(path)
    assert caught.value.violations[0].field == f"{path}: {field}"


# ---------------------------------------------------------------------------- the settings built


def test_no_flags_and_no_context_is_plaintext_to_the_default(config: Path) -> None:
    assert settings(ConnectionOptions()) == ConnectionSettings("localhost:8083")


def test_flags_alone(config: Path, files: Path) -> None:
    built = settings(ConnectionOptions(
        target="w:8443", cacert=files / "ca.pem", cert=files / "me.pem", key=files / "me.key",
        server_name="connect.example.com", token_file=files / "ops.token",
    ))
    assert built == ConnectionSettings(
        "w:8443",
        TlsOptions(files / "ca.pem", files / "me.pem", files / "me.key", "connect.example.com"),
        TOKEN,
    )
    assert TOKEN not in repr(built)
    assert settings(ConnectionOptions(target="w:443", tls=True)) == ConnectionSettings(
        "w:443", TlsOptions())
    assert settings(ConnectionOptions(target="w:443", server_name="n")).tls == TlsOptions(
        server_name="n")


def test_the_current_context_applies_unless_a_target_is_given(config: Path, files: Path) -> None:
    save_contexts(config, prod=("prod:8443", secure(files)))
    from_context = ConnectionSettings(
        "prod:8443",
        TlsOptions(files / "ca.pem", files / "me.pem", files / "me.key", "connect.example.com"),
        TOKEN,
    )
    assert settings(ConnectionOptions()) == from_context
    assert settings(ConnectionOptions(target="other:8083")) == ConnectionSettings("other:8083")
    assert settings(ConnectionOptions(target="w2:8443", context="prod")) == ConnectionSettings(
        "w2:8443", from_context.tls, TOKEN)


def test_each_flag_overrides_its_setting_of_the_context(config: Path, files: Path) -> None:
    save_contexts(config, prod=("prod:8443", secure(files)))
    (files / "other.token").write_text(OTHER_TOKEN)
    built = settings(ConnectionOptions(cacert=files / "other-ca.pem", server_name="n2",
                                       token_file=files / "other.token"))
    assert built.tls == TlsOptions(files / "other-ca.pem", files / "me.pem", files / "me.key",
                                   "n2")
    assert built.token == OTHER_TOKEN


def test_the_token_comes_from_the_flag_then_the_environment_then_the_context(
    config: Path, files: Path
) -> None:
    save_contexts(config, prod=("prod:8443", secure(files)))
    (files / "other.token").write_text(OTHER_TOKEN)
    environ = {TOKEN_ENV: " env-token-" + "z" * 20 + "\n"}
    assert settings(ConnectionOptions(token_file=files / "other.token"), environ).token == (
        OTHER_TOKEN)
    assert settings(ConnectionOptions(), environ).token == "env-token-" + "z" * 20
    assert settings(ConnectionOptions()).token == TOKEN


def usage_error(options: ConnectionOptions, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(click.UsageError) as caught:
        settings(options, environ)
    return caught.value.message


def test_a_token_without_tls_needs_insecure_token(config: Path, files: Path) -> None:
    plain = ConnectionOptions(target="w:8083", token_file=files / "ops.token")
    assert usage_error(plain).startswith("--token-file: a bearer token is sent over TLS only")
    assert usage_error(ConnectionOptions(target="w:8083"), {TOKEN_ENV: TOKEN}).startswith(
        f"${TOKEN_ENV}: a bearer token is sent over TLS only")
    plain.insecure_token = True
    assert settings(plain) == ConnectionSettings("w:8083", None, TOKEN)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"cacert": "plain.txt"},
         "--cacert: {files}/plain.txt is not a PEM file (no '-----BEGIN' line)"),
        ({"cert": "me.pem"}, "--cert: a client certificate needs both --cert and --key; "
                             "--key is missing"),
        ({"key": "me.key", "tls": True}, "--key: a client certificate needs both --cert and "
                                         "--key; --cert is missing"),
        ({"cacert": "ca.pem", "token_file": "bad.token"},
         "--token-file: {files}/bad.token: a token is printable ASCII with no spaces"),
        ({"cacert": "ca.pem", "token_file": "empty.token"},
         "--token-file: {files}/empty.token is empty"),
    ],
)
def test_bad_files_given_as_flags_name_the_flag(
    config: Path, files: Path, flags: dict[str, object], message: str
) -> None:
    options = ConnectionOptions(target="w:8443", **{
        name: files / value if isinstance(value, str) else value for name, value in flags.items()
    })
    assert usage_error(options) == message.format(files=files)


def test_bad_files_of_a_context_name_the_flag_and_the_context(config: Path, files: Path) -> None:
    save_contexts(config, prod=("prod:8443", secure(files)))
    (files / "ca.pem").unlink()
    assert usage_error(ConnectionOptions()) == (
        f"--cacert of context 'prod': cannot read {files}/ca.pem: No such file or directory")
    (files / "ca.pem").write_text("-----BEGIN X-----\n")
    (files / "ops.token").write_text("short")
    assert usage_error(ConnectionOptions()) == (
        f"--token-file of context 'prod': {files}/ops.token: a token has at least 16 "
        "characters, got 5")
    assert usage_error(ConnectionOptions(), {TOKEN_ENV: "a b"}) == (
        f"${TOKEN_ENV}: a token is printable ASCII with no spaces")


# ---------------------------------------------------------------------------- the command line


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(ctl, list(args), prog_name="connect-grpc ctl")
    return result.exit_code, result.stdout, result.stderr


def test_set_context_stores_absolute_paths_never_the_token(
    config: Path, files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(files)
    code, out, err = run("config", "set-context", "prod", "--target", "prod:8443",
                         "--cacert", "ca.pem", "--cert", "me.pem", "--key", "me.key",
                         "--server-name", "connect.example.com", "--token-file", "ops.token")
    assert (code, out) == (0, "context prod created (current)\n"), err
    assert TOKEN not in config.read_text()
    assert ContextsFile.load(config).get("prod").credentials == secure(files)

    assert run("config", "set-context", "dev", "--target", "dev:8083")[0] == 0
    code, out, _ = run("config", "get-contexts")
    assert (code, out.splitlines()) == (0, [
        "CURRENT  NAME  TARGET     TLS   TOKEN-FILE",
        "         dev   dev:8083   -     -",
        f"*        prod  prod:8443  mtls  {files}/ops.token",
    ])
    code, out, _ = run("config", "get-contexts", "-o", "wide")
    assert out.splitlines()[2].split() == [
        "*", "prod", "prod:8443", "mtls", f"{files}/ca.pem", f"{files}/me.pem",
        f"{files}/me.key", "connect.example.com", f"{files}/ops.token"]
    code, out, _ = run("config", "get-contexts", "-o", "json")
    [_, prod] = json.loads(out)["contexts"]
    assert prod["tls"]["ca-file"] == f"{files}/ca.pem" and TOKEN not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cacert", "missing.pem"], "Invalid value for '--cacert': File 'missing.pem' does "
                                      "not exist."),
        (["--cacert", "plain.txt"], "--cacert: plain.txt is not a PEM file"),
        (["--cert", "me.pem"], "--cert: a client certificate needs both --cert and --key"),
        (["--token-file", "ops.token"], "--token-file: a bearer token is sent over TLS only"),
        (["--tls", "--token-file", "bad.token"], "--token-file: bad.token: a token is"),
    ],
)
def test_set_context_refuses_bad_files_naming_the_flag(
    config: Path, files: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(files)
    code, _, err = run("config", "set-context", "prod", "--target", "p:1", *args)
    assert code == 2
    assert message.replace("plain.txt", f"{files}/plain.txt").replace(
        "bad.token", f"{files}/bad.token") in " ".join(err.split())
    assert not config.exists()


@pytest.mark.parametrize("after", [False, True], ids=["before the command", "after it"])
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cacert", "missing.pem"], "Invalid value for '--cacert'"),
        (["--key", "me.key"], "--key: a client certificate needs both --cert and --key"),
        (["--token-file", "ops.token"], "--token-file: a bearer token is sent over TLS only"),
        (["--tls", "--token-file", "empty.token"], "empty.token is empty"),
    ],
)
def test_bad_connection_flags_are_usage_errors_before_any_call(
    config: Path, files: Path, monkeypatch: pytest.MonkeyPatch, args: list[str],
    message: str, after: bool,
) -> None:
    monkeypatch.chdir(files)
    words = ["get", "connectors", *args] if after else [*args, "get", "connectors"]
    code, _, err = run("--target", NOWHERE, *words)
    assert code == 2, err
    assert message in " ".join(err.split())


def test_flags_after_the_command_override_those_before_it(
    config: Path, files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--insecure-token after the command turns on what the flags before it asked for; an
    absent flag after it does not undo --tls before it."""
    monkeypatch.chdir(files)
    assert run("--target", NOWHERE, "--token-file", "ops.token", "plugins")[0] == 2
    code, _, err = run("--target", NOWHERE, "--token-file", "ops.token", "plugins",
                       "--insecure-token", "--request-timeout", "2")
    assert code == 7, err  # the call was made: nothing listens there
    code, _, err = run("--target", NOWHERE, "--tls", "--token-file", "ops.token", "plugins",
                       "--request-timeout", "2")
    assert code == 7, err
