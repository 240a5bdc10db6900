"""Redaction and sanitising of untrusted evidence text.

Every string that leaves the diagnosis core (report, log line, cache entry) passes through
:func:`sanitize`, which implements FORMAT.md "What never reaches any output":

1. :func:`strip_control`: terminal escape sequences, control characters and invisible/format characters
   (``Cf``, default-ignorable code points, tag characters) are removed first, so nothing hidden can split
   a credential or an instruction (:mod:`diagnosis.untrusted`).
2. :func:`~diagnosis.untrusted.withhold_instructions`: lines addressed to an assistant or an operator are
   replaced by a marker that says a line was withheld and why.
3. :func:`redact`: credentials in every shape are replaced by ``[REDACTED]``; the key, header name or
   scheme in front of a value stays, so the reader sees what was there
   (``MYSQL_DB_PASSWORD,Value:[REDACTED]``, ``Authorization: Bearer [REDACTED]``).
4. :func:`defang_slack`: Slack broadcast/user/group/channel syntax becomes an inert marker.

All four are idempotent (``sanitize(sanitize(x)) == sanitize(x)``), and ordinary text costs a few substring
tests. Slack-specific escaping (``& < >``, code spans) is *not* done here; it belongs to the Block Kit
renderer (``handlers/blocks.py``).

Rule sources: runai-diagnose-failed-workload.md ("Redact credentials and sensitive values when citing
evidence"), FORMAT.md (the list above), and the rule set of gitleaks (``config/gitleaks.toml``,
github.com/gitleaks/gitleaks, MIT): its provider token formats (rule ids are named next to each pattern),
``generic-api-key`` (a key naming a secret, then an assignment operator, then the value), ``curl-auth-user``
/ ``curl-auth-header``, ``private-key``, ``jwt``, ``kubernetes-secret-yaml``; and detect-secrets'
``KeywordDetector`` denylist (password/passwd/pwd/secret/api_key/private_key/... key names, also in flags and
quoted JSON/YAML keys). The patterns are re-implemented here, not copied; they mask a *value* after its key
rather than report a finding, and they never mask the name of an object (``secrets "db-password" not
found``) or of a key (``couldn't find key password in Secret``): those are the diagnosis.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from diagnosis.confusables import fold as confusable_fold
from diagnosis.keywords import Keywords
from diagnosis.untrusted import WITHHELD, strip_invisible, withhold_instructions

__all__ = [
    "REDACTED",
    "WITHHELD",
    "defang_slack",
    "redact",
    "sanitize",
    "sanitize_obj",
    "sanitize_tree",
    "strip_control",
    "withhold_instructions",
]

REDACTED = "[REDACTED]"

# ANSI / VT100 escape sequences (CSI, OSC, and two-character escapes).
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Control characters other than tab and newline (CR is folded into newline, NEL into newline by
# strip_invisible); the invisible/format characters are removed by diagnosis.untrusted.strip_invisible.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f]")


def strip_control(text: str) -> str:
    """Remove terminal escapes, control characters and invisible/format characters; CR/CRLF become LF."""
    if text.isascii() and text.isprintable():  # no escape, control character, CR or invisible character
        return text
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = strip_invisible(text)
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return _CONTROL.sub("", text)


# ---------------------------------------------------------------------------------------------
# key names that name a secret (gitleaks generic-api-key keywords, detect-secrets KeywordDetector denylist)

# fmt: off
#: a key whose last word ends with one of these names a secret ("DB_PASSWORD", "clientSecret", "HF_TOKEN")
_SECRET_ENDINGS = (
    "password", "passwd", "passwort", "passphrase", "passcode", "contrasena", "contraseña", "secret", "token",
    "apikey", "accesskey", "secretkey", "privatekey", "credential", "credentials", "accountkey", "masterkey",
    "sharedkey", "signingkey", "encryptionkey", "sessionkey", "authkey", "clientkey", "sshkey", "licensekey",
)
#: a key whose last word is one of these names a secret ("pwd", docker config "auth", SAS "sig")
_SECRET_WORDS = frozenset(
    {
        "pass", "pwd", "auth", "creds", "cred", "sig", "signature", "sas", "cookie", "jwt",
        "dockerconfigjson", "dockercfg", "netrc", "otp", "totp", "hmac", "apitoken", "authtoken",
        "privatekeyid", "htpasswd", "pgpass", "authorization",
    }
)
#: "<one of these> key" names a secret ("api key", "tls.key", "client-key-data"); "key" alone does not
_KEY_QUALIFIERS = frozenset(
    {
        "api", "access", "secret", "private", "account", "master", "signing", "sign", "encryption", "encrypt",
        "decryption", "client", "auth", "service", "ssh", "tls", "ssl", "license", "licence", "shared",
        "storage", "subscription", "app", "application", "consumer", "session", "webhook", "hmac", "deploy",
        "admin", "root", "write", "wandb", "ngc", "openai", "anthropic", "stripe", "sendgrid", "mailgun",
        "datadog", "dd", "newrelic", "sentry", "slack", "github", "gitlab", "hf", "huggingface", "aws", "azure",
        "gcp", "google", "gemini", "mistral", "cohere", "groq", "pinecone", "comet", "neptune", "clearml",
        "mlflow", "replicate", "together", "kaggle", "x", "ocp", "apim", "functions", "user", "personal", "pgp",
        "gpg", "rsa", "ec", "ed25519", "signer", "hmackey", "jwt", "cookie", "csrf", "sas",
    }
)
#: a trailing word that only describes the value's encoding: "client-key-data", "password_b64", "token_value"
_VALUE_SUFFIXES = frozenset(
    {
        "data", "value", "val", "b64", "base64", "enc", "encrypted", "hash", "raw", "str", "string", "text",
        "plain", "plaintext", "content", "contents", "bytes", "pem", "der", "hex", "secret", "base",
    }
)
#: "<one of these> token" is a model vocabulary token or a count, not a credential ("eos_token", "max_tokens")
_ML_TOKEN_WORDS = frozenset(
    {
        "pad", "eos", "bos", "unk", "sep", "cls", "mask", "start", "end", "begin", "stop", "special", "additional",
        "image", "img", "audio", "video", "vision", "new", "max", "min", "num", "total", "prompt", "completion",
        "input", "output", "first", "last", "next", "prev", "sos", "eot", "eom", "im", "think", "tool", "default",
        "decoder", "encoder", "placeholder", "fim", "boi", "eoi", "boa", "eoa", "vocab", "per", "cached",
        "generated", "context", "reasoning", "thinking", "sample", "target", "label", "ignore", "split",
        "system", "user", "assistant", "chat", "bot", "eod", "pause", "break", "line", "word", "char",
    }
)
# fmt: on
#: services whose "<word> token" is a credential even when the word is an ML one ("SLACK_BOT_TOKEN")
_TOKEN_ISSUERS = frozenset(
    {"slack", "telegram", "discord", "github", "gitlab", "twilio", "teams", "mattermost", "pagerduty", "vault"}
)
_CAMEL_1 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL_2 = re.compile(r"([a-z0-9])([A-Z])")
_NON_WORD = re.compile(r"[\W_]+")


@lru_cache(maxsize=4096)
def _key_words(key: str) -> tuple[str, ...]:
    """The lower-case words of a key name: camelCase and ``_ . -`` split; Unicode case variants and
    compatibility forms folded ("paſſword", "apı_key", "ＰＡＳＳＷＯＲＤ" -> their ASCII words), and letters that
    look like ASCII letters read as those ("PАSSWORD" with a Cyrillic А, :mod:`diagnosis.confusables`)."""
    k = confusable_fold(key)  # "DB_PАSSWORD" (a Cyrillic А) is DB_PASSWORD (TR39 confusables)
    k = _CAMEL_2.sub(r"\1_\2", _CAMEL_1.sub(r"\1_\2", k))
    k = unicodedata.normalize("NFKC", k).casefold().replace("\u0131", "i").replace("\u0307", "")
    return tuple(w for w in _NON_WORD.split(k) if w)


@lru_cache(maxsize=4096)
def secret_key(key: str) -> bool:
    """Whether a key/field/flag/variable name names a secret (so its value is masked).

    ``DB_PASSWORD``, ``clientSecret``, ``HF_TOKEN``, ``x-api-key``, ``tls.key``, ``client-key-data``,
    ``private_key_id``, ``auth`` (docker config), ``.dockerconfigjson``, ``passwd``, ``pwd``: yes.
    ``secretName``, ``token_file``, ``password_length``, ``access_key_id``, ``eos_token``, ``max_tokens``,
    ``key``, ``KeyError``: no (they name an object, a setting or a vocabulary item, not a secret).
    """
    words = list(_key_words(key))
    if not words:
        return False
    joined = "".join(words)
    if joined in ("privatekeyid", "awsaccesskeyid") or words[-3:] == ["private", "key", "id"]:
        return True
    if len(words) > 1 and words[-1] in _VALUE_SUFFIXES and words[-1] != "secret":
        words = words[:-1]
    last = words[-1]
    prev = words[-2] if len(words) > 1 else ""
    if last == "token" or (last.endswith("token") and last != "token" and len(words) == 1):
        if prev in _ML_TOKEN_WORDS or (last != "token" and last[: -len("token")] in _ML_TOKEN_WORDS):
            return any(w in _TOKEN_ISSUERS for w in words[:-1])  # "SLACK_BOT_TOKEN" is a credential
        return True
    if last == "secret" and prev in ("existing", "pull", "image", "k8s", "kube", "kubernetes", "vault", "sealed"):
        return False
    if last in _SECRET_WORDS:
        return True
    if last == "key":
        return prev in _KEY_QUALIFIERS
    if last in ("keys", "tokens", "secrets", "passwords"):
        return False
    # "PassWord", "pass_word": the last two words, or all of them, spell a secret's name
    return any(w.endswith(_SECRET_ENDINGS) for w in (last, prev + last, "".join(words)))


# ---------------------------------------------------------------------------------------------
# values

# fmt: off
#: values that are not secrets even after a secret key ("password: required", "token: <nil>")
_NOT_SECRET = frozenset(
    {
        "", "not", "set", "unset", "missing", "required", "invalid", "expired", "empty", "none", "null", "nil",
        "true", "false", "yes", "no", "on", "off", "ok", "error", "failed", "failure", "denied", "found",
        "present", "provided", "supplied", "configured", "specified", "defined", "given", "must", "should",
        "is", "was", "are", "the", "a", "an", "for", "of", "in", "to", "from", "with", "and", "or", "secret",
        "secrets", "configmap", "string", "str", "bool", "boolean", "int", "integer", "number", "optional",
        "mandatory", "changed", "updated", "rotated", "incorrect", "wrong", "mismatch", "refreshed", "refresh",
        "redacted", "hidden", "masked", "sensitive", "value", "authentication", "authorization", "unauthorized",
        "forbidden", "file", "env", "environment", "variable", "default", "auto", "generated", "loaded", "read",
        "reading", "enabled", "disabled", "basic", "bearer", "digest", "none.", "n/a", "na", "unknown",
        "undefined", "prompt", "stdin", "interactive", "yaml", "json", "opaque", "omitted", "elided", "removed",
        "filtered", "xxx",
        "changeme", "example", "placeholder", "type", "kind", "name", "key", "ref", "has", "had", "will",
        "be", "been", "being", "length", "size", "too", "short", "long", "weak", "strong", "exists", "exist",
        "did", "does", "cannot", "can't", "could", "couldn't", "failed:", "error:", "aws4-hmac-sha256", "token",
        "negotiate", "ntlm", "oauth", "apikey", "sharedkey",
    }
)
# fmt: on
_PLACEHOLDER = re.compile(
    r"\[[A-Za-z _-]*\]|<[^>]*>?|\$\{?[A-Za-z_][\w.]*\}?|\$\([^)]*\)?|\{\{[^}]*\}?\}?|%\w+%?|[*x•·.…#_-]+"
    r"|/[\w.@-]+(?:/[\w.@-]+)+/?|~/[\w./-]*",
    re.IGNORECASE,
)


_NOT_A_VALUE = re.compile(
    r"-----BEGIN"  # a PEM block: the pem-block rule masks its body and keeps its header
    r"|[A-Za-z_][\w.-]*=[^=]"  # another assignment ("credentials: AWS_PROFILE=x"): that one is judged itself
    r"|[A-Za-z_][\w.]*[(\[]"  # code: a call or a subscript ("token = get_token(user)", "os.environ[")
    r"|(?:self|cls|args|kwargs|os|config|cfg|settings|env|process\.env|params|opts|options|request|ctx)\.\w"
    r"|[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?/[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$"  # a Kubernetes namespace/name
)


def _masked_value(value: str) -> bool:
    """Whether ``value`` after a secret key should be masked: anything but placeholders, references, paths,
    code, object names and the words a message uses instead of a value."""
    v = value.strip()
    if v.casefold() in _NOT_SECRET or _PLACEHOLDER.fullmatch(v):
        return False
    return _NOT_A_VALUE.match(v) is None


def _secretish(value: str) -> bool:
    """Whether a free-standing word looks like a secret rather than prose: 4+ characters and a digit, a
    symbol or an inner capital ("hunter2", "Tr0ub4dor&3", "aB3xY"), and not a placeholder."""
    v = value.strip()
    if len(v) < 4 or not _masked_value(v):
        return False
    return any(c.isdigit() for c in v) or any(not c.isalnum() for c in v) or any(c.isupper() for c in v[1:])


# ---------------------------------------------------------------------------------------------
# the rules: each finds the *value* (the named group ``v``, or ``q``/``s``/``e`` for quoted forms) to mask

_V_END = r"""\s"'`,;&}"""  # where an unquoted value ends
_VALUE = (
    r"(?:\\\"(?P<e>(?:[^\\\n]|\\(?!\")[^\n])*+)\\\""  # \"escaped\" (JSON inside a JSON string)
    r"|\"(?P<q>(?:[^\"\\\n]|\\.)*+)\""  # "double quoted"
    r"|'(?P<s>[^'\n]*+)'"  # 'single quoted'
    rf"|(?P<v>(?:[^{_V_END}\\\[]|\\(?![rnt\"'])|\[(?!\\[rn]\]))++))"  # bare (to a [\r][\n] of a wire log)
)
_NOT_MASKED = r"(?!\[REDACTED\])"

Check = Callable[[re.Match[str], str], bool]


def _check_key(m: re.Match[str], value: str) -> bool:
    """generic key = value: the key names a secret, the value is not a placeholder, and the "key" is not the
    name of an object in a Kubernetes message (``for volume "hf-token" : secret ...``)."""
    key = m.group("key")
    if not secret_key(key):
        return False
    if m.group("sep").strip() in ("", "-") and not key.startswith("-"):
        return False  # a space only separates a flag from its value
    if m.group("kq") and _OBJECT_CONTEXT.search(m.string, max(0, m.start() - 40), m.start()):
        return False  # a quoted object name in a Kubernetes message
    if value.isdigit() and _key_words(key)[-1].endswith("token"):
        return False  # a vocabulary token id or a count
    if _SCHEME.match(value) and _key_words(key)[-1] in ("authorization", "auth"):
        return False  # "Authorization": "Bearer x": the auth-header rule masks the credential, the scheme stays
    return _masked_value(value)


_OBJECT_CONTEXT = re.compile(
    r"(?i)\b(?:volumes?|secrets?|configmaps?|pvcs?|persistentvolumeclaims?|serviceaccounts?|objects?|resources?"
    r"|named?|key|keys|item|items|field|env(?:ironment)?[ \t]+variable|variable|var)[ \t]*[\"']?\Z"
)


_SCHEME = re.compile(r"(?i)(?:bearer|basic|digest|negotiate|ntlm|token|aws4-hmac-sha256|oauth|sharedkey)[ \t]+\S")


def _check_secretish(m: re.Match[str], value: str) -> bool:
    return _secretish(value)


def _check_header(m: re.Match[str], value: str) -> bool:
    """A whole header value: with a known scheme always, otherwise when it is not a plain word."""
    if m.group("scheme") or m.group("hdr").lower().endswith("cookie"):
        return bool(value.strip()) and value.strip().casefold() not in _NOT_SECRET
    v = value.strip()
    return " " not in v and (_secretish(v) or (len(v) >= 8 and _masked_value(v)))


def _check_struct(m: re.Match[str], value: str) -> bool:
    """``Key:DB_PASSWORD,Value:...``, ``{"name": "HF_TOKEN", "value": "..."}``: the named key is a secret."""
    return secret_key(m.group("key")) and _masked_value(value)


def _check_cases(m: re.Match[str], value: str) -> bool:
    """base64 keys have both cases (hex digests and plain words do not)."""
    return any(c.isupper() for c in value) and any(c.islower() for c in value)


def _check_mixed(m: re.Match[str], value: str) -> bool:
    """Provider prefixes that also start ordinary names (``sk-``): the rest has a digit and a letter, and a
    capital or no dash ("sk-training-job-2024" is a name, "sk-abc...012345" and "sk-proj-AbC..." are keys)."""
    rest = value[3:]
    return (
        any(c.isdigit() for c in rest)
        and any(c.isalpha() for c in rest)
        and (any(c.isupper() for c in rest) or "-" not in rest)
    )


# prose: "<keyword> is X", "<keyword>: X", "<keyword> was set to X"; X a single secret-looking word
_PROSE_LINK = (
    r"(?:[ \t]*[:=][ \t]*|[ \t]+(?:is|was|are|set[ \t]+to|is[ \t]+set[ \t]+to|will[ \t]+be|becomes?|reads)"
    r"[ \t]*:?[ \t]+)[\"'`]?"
)
_PROSE_VALUE = _NOT_MASKED + r"[^\s\"'`,;=]*[^\s\"'`,;.!?)=]"
_IDENTIFIER = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def _check_prose(m: re.Match[str], value: str) -> bool:
    """A prose value: secret-looking, not a SCREAMING_SNAKE identifier (a category or a variable name) and
    not itself a key (``credentials: AWS_ACCESS_KEY_ID=...``, ``token: fn(...)``)."""
    after = m.string[m.end() : m.end() + 1]
    return _secretish(value) and not _IDENTIFIER.fullmatch(value) and after not in ("=", "(", ":")


_KEY = r"(?P<key>(?=[\w.-]{0,80}?(?i:pass|pwd|secret|token|key|auth|cred|sig|cookie|docker|netrc|jwt|otp|contrase|hmac))[\w.-]{1,100}+)"  # noqa: E501
_SEP = r"(?P<sep>[ \t]*(?:=>|:=|::|[:=])[ \t]*|[ \t]+(?=[^\s-]))"

_RULES: list[tuple[str, re.Pattern[str], Check | None]] = [
    # gitleaks private-key, plus PGP blocks and encrypted keys: the body of a BEGIN ... END block (to the
    # END line; if the text was cut, the base64 lines that follow the header).
    (
        "pem-block",
        re.compile(
            r"-----BEGIN[ A-Z0-9_-]{0,60}(?:PRIVATE|PGP|ENCRYPTED|OPENSSH|SECRET)[ A-Z0-9_-]{0,60}-----"
            r"(?:(?P<v>(?:(?!-----(?:END|BEGIN) )[\s\S]){1,20000}+)-----END[ A-Z0-9_-]{0,100}-----"
            r"|(?P<q>(?:(?:\\[nr]|[\r\n \t])*(?:[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9+/]{1,15}={1,2}"
            r"|(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset):[^\n\\]*))++))",
        ),
        None,
    ),
    # base64 of "-----BEGIN" (k8s Secret data such as tls.key, kubeconfig client-key-data)
    ("pem-base64", re.compile(r"(?P<v>LS0tLS1CRUdJTi[A-Za-z0-9+/=]*)"), None),
    # gitleaks jwt (header and payload are base64url JSON: "eyJ"), with or without a signature
    ("jwt", re.compile(r"(?<![\w-])(?P<v>eyJ[\w-]{5,}\.eyJ[\w-]{2,}\.?[\w+/=.-]*)"), None),
    # base64 of a docker config JSON ('{"auths":' compact, pretty-printed, tab-indented, spaced)
    (
        "dockerconfig-base64",
        re.compile(r"(?P<v>(?:eyJhdXRocyI|ewogICJhdXRocyI|ewoJImF1dGhzIj|eyAiYXV0aHMiOi)[\w+/=]*)"),
        None,
    ),
    # whole header values: gitleaks curl-auth-header; FORMAT.md "whole values of Authorization,
    # Proxy-Authorization and X-Amz-Security-Token headers", to the end of the value (quote, [\r][\n] of a
    # wire log, escaped or real end of line); the scheme stays.
    (
        "auth-header",
        re.compile(
            r"(?i)(?<![\w-])(?P<kq>\\?[\"']?)(?P<hdr>proxy-authorization|authorization|x-amz-security-token"
            r"|cookie|set-cookie|x-vault-token|private-token|x-auth-token|x-api-key|api-key"
            r"|x-goog-api-key|ocp-apim-subscription-key|x-functions-key|x-jfrog-art-api|x-registry-auth)(?P=kq)"
            r"[ \t]*+:[ \t]*+(?:\\?[\"'])?+"
            r"(?P<scheme>(?:bearer|basic|digest|negotiate|ntlm|token|aws4-hmac-sha256|aws|oauth|sharedkey(?:lite)?"
            r"|apikey|api-key|key|ssws|goog4-rsa-sha256|splunk|dsn|jwt|sso-key|hmac|mac|gitlab-token)[ \t]++)?+"
            r"(?:(?P<v>" + _NOT_MASKED + r"(?:[^\r\n\"'\\\[]|\\(?![rn\"'])|\[(?!\\[rn]\]))++))"
        ),
        _check_header,
    ),
    # bare "Bearer <token>" / "Basic <base64>" / "token <token>" (a header quoted without its name)
    (
        "auth-scheme",
        re.compile(
            r"(?i)\b(?:bearer|basic)[ \t]+(?P<v>" + _NOT_MASKED + r"[A-Za-z0-9._~+/=-]{7,}[A-Za-z0-9_~+/=-])"
            r"|\btoken[ \t]+(?P<q>" + _NOT_MASKED + r"(?=[\w.~+/=-]*\d)(?=[\w.~+/=-]*[A-Za-z])[\w.~+/=-]{16,})"
        ),
        _check_secretish,
    ),
    # passwords in URLs: scheme://user:password@host (the password may contain "@" and "#", as redis-py and
    # libpq read it; user may be empty; the slashes may be JSON-escaped: "postgres:\/\/u:p@h")
    (
        "url-userinfo",
        re.compile(
            r"(?i)\b[a-z][a-z0-9+.-]{1,30}:(?:\\?/){2}[^\s:/?#@\"'<>\\]*:(?:(?P<v>"
            + _NOT_MASKED
            + r"[^\s/?\"'<>]+)@[\w\[])"
        ),
        None,
    ),
    # Azure connection strings: the whole SharedAccessSignature (to ";"), AccountKey/SharedAccessKey
    ("azure-sas", re.compile(r"(?i)\bSharedAccessSignature=(?:(?P<v>" + _NOT_MASKED + r"[^;\s\"'<>]+))"), None),
    # key/value dumps: Key:DB_PASSWORD,Value:..., {"name": "HF_TOKEN", "value": "..."}, Go {Name:X Value:y},
    # YAML "- name: X\n  value: y"
    (
        "struct-dump",
        re.compile(
            r"(?i)(?<![\w-])[\"']?(?:key|name|env|variable|var|parametername|parameter)[\"']?[ \t]*[:=][ \t]*"
            r"\\?[\"']?(?P<key>[\w.-]{1,100}+)\\?[\"']?[ \t]*[,;]?\s{0,40}[\"']?(?:value|val|parametervalue)[\"']?"
            r"[ \t]*[:=][ \t]*(?:" + _NOT_MASKED + _VALUE + ")"
        ),
        _check_struct,
    ),
    # gitleaks generic-api-key / detect-secrets KeywordDetector: KEY=value, KEY: value, "key": "value",
    # key => value, --flag value, --flag=value (the key names a secret, see secret_key)
    (
        "key-value",
        re.compile(r"(?<![\w.-])(?P<kq>\\?[\"']?)" + _KEY + r"(?P=kq)" + _SEP + r"(?:" + _NOT_MASKED + _VALUE + ")"),
        _check_key,
    ),
    # -p/-a after clients whose -p is a password (mysql family, sshpass, registry logins), redis-cli -a
    (
        "cli-password",
        re.compile(
            r"(?i)(?<![\w-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb(?:-dump|-admin)?|sshpass"
            r"|(?:docker|podman|nerdctl|buildah|skopeo|oras|helm[ \t]+registry|crane[ \t]+auth)[ \t]+login)\b"
            r"[^\n|;&]{0,300}?[ \t](?-i:-p)[ \t]*[\"']?(?:(?P<v>" + _NOT_MASKED + r"(?!-)[^\s\"']+))"
            r"|(?<![\w-])redis-cli\b[^\n|;&]{0,300}?[ \t](?-i:-a)[ \t]+[\"']?(?:(?P<q>"
            + _NOT_MASKED
            + r"(?!-)[^\s\"']+))"
        ),
        None,
    ),
    # echo <password> | docker login --password-stdin
    (
        "password-stdin",
        re.compile(
            r"(?i)\becho[ \t]+(?:-n[ \t]+)?[\"']?(?:(?P<v>" + _NOT_MASKED + r"(?!\$)[^\s\"'|]+))[^\n|]*\|[^\n]{0,120}?"
            r"--password-stdin"
        ),
        None,
    ),
    # gitleaks curl-auth-user: curl -u user:password
    (
        "curl-user",
        re.compile(
            r"(?i)\b(?:curl|wget|http)\b[^\n]{0,300}?[ \t](?:-u|--user)[ \t=]+[\"']?[^\s:\"']*:(?:(?P<v>"
            + _NOT_MASKED
            + r"[^\s\"']+))"
        ),
        None,
    ),
    # .netrc: "machine host login user password X", "default login user password X", or a "password X" line
    # of its own; a token in the login field (GitHub's "login <token> password x-oauth-basic")
    (
        "netrc",
        re.compile(
            r"(?im)(?:\bmachine[ \t]+\S+|(?<![\w-])default)(?:[ \t]+login[ \t]+\S+)?[ \t]+password[ \t]+"
            r"(?:(?P<v>" + _NOT_MASKED + r"\S+))"
            r"|^[ \t]*password[ \t]+(?:(?P<q>" + _NOT_MASKED + r"\S+)[ \t]*$)"
        ),
        None,
    ),
    (
        "netrc-login",
        re.compile(
            r"(?i)(?:\bmachine[ \t]+\S+|(?<![\w-])default)[ \t]+login[ \t]+(?:(?P<v>" + _NOT_MASKED + r"\S+)"
            r"(?=[ \t]+password[ \t]+x-oauth)|(?P<q>"
            + _NOT_MASKED
            + r"(?=[\w.~+/=-]*\d)(?=[\w.~+/=-]*[A-Za-z])[\w.~+/=-]{20,})(?!\S))"
        ),
        None,
    ),
    # prose: "the password is X", "password for user svc was X", "token: X", "login with password X"
    (
        "prose",
        re.compile(
            r"(?i)\b(?:password|passwd|passphrase|passcode|pwd|token|api[ _-]?key)(?:[ \t]+(?!is\b|was\b|are\b)"
            r"[\w.@'-]+){0,3}?" + _PROSE_LINK + r"(?P<v>" + _PROSE_VALUE + r")"
            r"|\b(?:secret|secret[ _-]?key|access[ _-]?key|credentials?)"
            + _PROSE_LINK
            + r"(?P<q>"
            + _PROSE_VALUE
            + r")"
            r"|\b(?:with|using|use|via|enter|type)[ \t]+(?:the[ \t]+)?(?:password|passwd|passphrase|token"
            r"|api[ _-]?key|secret)[ \t]+[\"'`]?(?P<s>" + _PROSE_VALUE + r")"
        ),
        _check_prose,
    ),
    # wandb login <key>; W&B API keys (40 hex, "local-" prefix for local servers) next to "wandb"
    (
        "wandb",
        re.compile(
            r"(?i)\bwandb[ \t]+login[ \t]+(?:--?[\w-]+(?:[ \t=]+(?!--?)[^\s-]\S*)?[ \t]+)*"
            r"(?:(?P<v>" + _NOT_MASKED + r"(?!-)[\w-]{20,}(?![\w:/.-])))"
            r"|\bwandb\b[^\n]{0,100}?(?<![\w-])(?P<q>(?:local-)?[0-9a-f]{40})(?![\w-])"
            r"|\bwandb\.login\([^)\n]{0,100}?\bkey[ \t]*=[ \t]*[\"'](?P<s>[^\"'\n]+)"
        ),
        None,
    ),
    # NGC: legacy base64 API keys next to "ngc" / nvcr.io (new keys start "nvapi-", below)
    (
        "ngc-key",
        re.compile(r"(?i)\b(?:ngc|nvcr\.io)\b[^\n]{0,100}?(?<![\w+/=-])(?P<v>[A-Za-z0-9+/]{60,}={0,2})(?![\w+/=-])"),
        _check_cases,
    ),
    # webhooks: gitleaks slack-webhook-url, microsoft-teams-webhook; Discord webhooks (the path is the secret;
    # its slashes may be JSON-escaped, "hooks.slack.com\/services\/T..\/B..\/x")
    (
        "webhook",
        re.compile(
            r"(?i)hooks\.slack\.com\\?/(?:services|workflows|triggers)\\?/(?P<v>(?:[A-Za-z0-9+_-]|\\?/){8,})"
            r"|discord(?:app)?\.com\\?/api\\?/webhooks\\?/(?P<q>\d+\\?/[\w-]+)"
            r"|\.webhook\.office\.com\\?/webhookb2\\?/(?P<s>[^\s\"'<>]+)"
        ),
        None,
    ),
    # OpenAI / Anthropic / DeepSeek style "sk-" keys (gitleaks openai-api-key, anthropic-api-key)
    (
        "sk-key",
        re.compile(r"(?<![\w-])(?P<v>sk-(?:proj-|svcacct-|admin-|ant-[a-z]+\d*-)?[A-Za-z0-9_-]{20,}+)"),
        _check_mixed,
    ),
    # provider token formats (gitleaks rule ids in brackets)
    (
        "prefixed-token",
        re.compile(
            r"(?<![\w-])(?P<v>"
            # [aws-access-token]
            r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}(?![A-Za-z0-9])"
            r"|ABSK[A-Za-z0-9+/]{100,}={0,2}"  # [aws-amazon-bedrock-api-key-long-lived]
            r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}"  # [github-pat, -oauth, -app-token, -refresh-token, -fine-grained-pat]  # noqa: E501
            r"|gl(?:pat|dt|ft|rt|ptt|soat|oas|agent|imt|ffct|cbt)-[\w-]{16,}|GR1348941[\w-]{20}"  # [gitlab-*]
            r"|xox[abposre]-[A-Za-z0-9-]{10,}|xoxe\.xox[bp]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,}"  # [slack-*]
            r"|AIza[\w-]{35}|ya29\.[\w-]{20,}|GOCSPX-[\w-]{20,}|1//0[\w-]{30,}"  # [gcp-api-key], Google OAuth
            r"|hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,}"  # [huggingface-access-token, -organization-api-token]
            r"|nvapi-[\w-]{20,}"  # NVIDIA NGC / build.nvidia.com API keys
            r"|(?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,99}|whsec_[A-Za-z0-9]{20,}"  # [stripe-access-token]
            r"|npm_[A-Za-z0-9]{36}"  # [npm-access-token]
            r"|pypi-AgE[\w-]{40,}"  # [pypi-upload-token] (pypi.org and test.pypi.org)
            r"|dapi[a-f0-9]{32}(?:-\d)?"  # [databricks-api-token]
            r"|do[opr]_v1_[a-f0-9]{64}"  # [digitalocean-*]
            r"|hv[sbr]\.[\w-]{24,}"  # [vault-service-token, vault-batch-token]
            r"|SG\.[\w-]{16,32}\.[\w-]{16,64}"  # [sendgrid-api-token]
            r"|ATATT3[\w=-]{100,}"  # [atlassian-api-token]
            r"|[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34}"  # [azure-ad-client-secret]
            r"|glc_[A-Za-z0-9+/]{32,}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9]{40,}"  # [grafana-*]
            r"|sntry[us]_[\w+/=]{40,}"  # [sentry-org-token, sentry-user-token]
            r"|PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"  # [postman-api-token]
            r"|pul-[a-f0-9]{40}"  # [pulumi-api-token]
            r"|dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,}"  # [doppler-api-token]
            r"|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"  # [shopify-*]
            r"|lin_api_[A-Za-z0-9]{40}"  # [linear-api-key]
            r"|ntn_\d{11}[A-Za-z0-9]{35}"  # [notion-api-token]
            r"|pplx-[A-Za-z0-9]{48}"  # [perplexity-api-key]
            r"|gsk_[A-Za-z0-9]{48,}|r8_[A-Za-z0-9]{37}|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"  # Groq, Replicate, LangSmith  # noqa: E501
            r"|tskey-[a-z]+-[\w-]{20,}|xai-[A-Za-z0-9]{60,}"  # Tailscale, xAI
            r"|AGE-SECRET-KEY-1[0-9A-Z]{58}"  # [age-secret-key]
            r"|ops_eyJ[\w+/]{100,}={0,3}|A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}"  # [1password-*]  # noqa: E501
            r"|AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59}"  # [artifactory-api-key, -reference-token]
            r"|LTAI[A-Za-z0-9]{20}"  # [alibaba-access-key-id]
            r"|HRKU-AA[\w-]{58}"  # [heroku-api-key-v2]
            r"|[a-z0-9]{14}\.atlasv1\.[\w=-]{60,70}"  # [hashicorp-tf-api-token]
            r"|fo1_[\w-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3}"  # [flyio-access-token]
            r"|sq0(?:atp|csp)-[\w-]{22,43}"  # [square-access-token]
            r"|key-[a-f0-9]{32}"  # [mailgun-private-api-token]
            r"|dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"  # [dynatrace-api-token]
            r"|sha256~[\w-]{43}"  # [openshift-user-token]
            r"|CLOJARS_[a-z0-9]{60}|rubygems_[a-f0-9]{48}|pnu_[A-Za-z0-9]{36}|rdme_[a-z0-9]{70}"  # [clojars, rubygems, prefect, readme]  # noqa: E501
            r"|pscale_(?:tkn|oauth|pw)_[\w=.-]{32,64}|EZ[AT]K[A-Za-z0-9]{54}|fio-u-[\w=-]{64}"  # [planetscale, easypost, frameio]  # noqa: E501
            r"|FLW(?:SECK|PUBK)_TEST-[a-hA-H0-9]{12,32}(?:-X)?|xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"  # [flutterwave, sendinblue]  # noqa: E501
            r"|sgp_(?:[a-fA-F0-9]{16}_)?[a-fA-F0-9]{40}|p8e-[A-Za-z0-9]{32}"  # [sourcegraph-access-token, adobe-client-secret]  # noqa: E501
            r"|4b1d[A-Za-z0-9]{38}(?![A-Za-z0-9])"  # [clickhouse-cloud-api-secret-key]
            r")"
        ),
        None,
    ),
    # [twilio-api-key]; an auth token passed after the account SID (Client("AC...", "<token>"), "AC...:<token>")
    (
        "twilio",
        re.compile(
            r"(?<![\w-])(?P<v>SK[0-9a-fA-F]{32})(?![0-9a-fA-F])"
            r"|(?<![\w-])AC[0-9a-fA-F]{32}[\"']?[ \t]*[,:][ \t]*(?:\w+[ \t]*=[ \t]*)?[\"']?"
            r"(?P<q>" + _NOT_MASKED + r"[0-9a-fA-F]{32})(?![0-9a-fA-F])"
        ),
        None,
    ),
    # PuTTY private keys (.ppk): the Private-Lines block and the Private-MAC (real or escaped newlines)
    (
        "putty-key",
        re.compile(
            r"(?i)Private-Lines:[ \t]*\d+[ \t]*(?:\r?\n|(?:\\r)?\\n)(?P<v>[A-Za-z0-9+/=]+(?![\w:-])"
            r"(?:(?:\r?\n|(?:\\r)?\\n)[A-Za-z0-9+/=]+(?![\w:-]))*)|Private-(?:MAC|Hash):[ \t]*(?P<q>[0-9a-fA-F]{8,})"
        ),
        None,
    ),
    # [telegram-bot-api-token] (also inside a bot API URL: /bot<token>/)
    ("telegram", re.compile(r"(?:(?<![\w-])|(?<=/bot))(?P<v>\d{6,12}:AA[\w-]{30,40})(?![\w-])"), None),
    # kaggle.json: {"username": "...", "key": "..."} (a bare "key" names a secret only here)
    (
        "kaggle",
        re.compile(
            r"(?i)[\"']username[\"'][ \t]*:[ \t]*[\"'][^\"'\n]*[\"'][ \t]*,[ \t]*[\"']key[\"'][ \t]*:[ \t]*"
            r"[\"'](?P<v>[^\"'\n]+)"
        ),
        None,
    ),
    # a bare AWS secret access key: 40 characters of [A-Za-z0-9/+] with both cases and a digit or / +
    (
        "aws-secret-bare",
        re.compile(
            r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[0-9/+])"
            r"(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        None,
    ),
]


# Each rule runs only when its gate is in the (case-folded) text: one of these substrings, or the regex. Most
# evidence has none and is returned as it is; a long log runs only the rules its words call for. All the words
# are looked for in one pass (_GATE_WORDS), as gitleaks prefilters its rules by their keywords.
# fmt: off
_GATES: dict[str, tuple[str, ...] | re.Pattern[str]] = {
    "pem-block": ("-----begin",),
    "pem-base64": ("ls0tls1crudjti",),
    "jwt": ("eyj",),
    "dockerconfig-base64": ("eyjhdxrocy", "ewogicjhdxrocy", "ewojimf1dghzij", "eyaiyxv0ahmio"),
    "auth-header": (
        "authorization", "x-amz-security-token", "cookie", "x-vault-token", "private-token", "x-auth-token", "api-key",
        "subscription-key", "x-functions-key", "x-jfrog-art-api", "x-registry-auth",
    ),
    "auth-scheme": ("bearer", "basic", "token"),
    "url-userinfo": ("://", ":\\/\\/"),
    "azure-sas": ("sharedaccesssignature",),
    "struct-dump": ("value:", 'value"', "value'", "value=", "value :", "val:", "val="),
    "key-value": (
        "pass", "pwd", "secret", "token", "key", "auth", "cred", "sig", "cookie", "docker", "netrc", "jwt", "otp",
        "contrase", "hmac",
    ),
    "cli-password": ("mysql", "mariadb", "sshpass", "login", "redis-cli"),
    "password-stdin": ("--password-stdin",),
    "curl-user": ("curl", "wget", "http"),
    "netrc": ("password",),
    "netrc-login": ("login",),
    "prose": ("pass", "pwd", "token", "api", "secret", "access", "credential"),
    "wandb": ("wandb",),
    "ngc-key": ("ngc", "nvcr"),
    "webhook": ("hooks.slack", "discord", "webhook.office"),
    "sk-key": ("sk-",),
    "prefixed-token": (
        "akia", "asia", "a3t", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka", "absk", "ghp_",
        "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
        "glpat-", "gldt-", "glft-", "glrt-", "glptt-", "glsoat-", "gloas-", "glagent-", "glimt-", "glffct-", "glcbt-",
        "gr1348941", "xox", "xapp-", "aiza", "ya29.", "gocspx-", "1//0", "hf_", "api_org_", "nvapi-", "sk_", "rk_",
        "whsec_", "npm_", "pypi-", "dapi", "_v1_", "hvs.", "hvb.", "hvr.", "sg.", "atatt3", "q~", "sntry",
        "glc_", "glsa_", "eyjrijoi", "pmak-", "pul-", "dp.", "shp", "lin_api_", "ntn_", "pplx-", "gsk_", "r8_",
        "lsv2_", "tskey-", "xai-", "age-secret-key-", "ops_eyj", "a3-", "akcp", "cmvmd", "ltai", "hrku-aa",
        "atlasv1", "fo1_", "fm1", "fm2", "sq0", "key-", "dt0c01.", "sha256~", "clojars_", "rubygems_", "pnu_",
        "rdme_", "pscale_", "ezak", "eztk", "fio-u-", "flw", "xkeysib-", "sgp_", "p8e-", "4b1d",
    ),
    "twilio": re.compile(r"SK[0-9a-fA-F]{32}|AC[0-9a-fA-F]{32}"),
    "putty-key": ("private-lines", "private-mac", "private-hash"),
    "telegram": (":aa",),
    "kaggle": ("username",),
    "aws-secret-bare": re.compile(r"[A-Za-z0-9/+]{40}"),
}
# fmt: on


def _fold(text: str) -> str:
    """Lower-case ``text`` for the gates, with the case variants the rules' ``(?i)`` also matches ("ſ", "K", "ı")."""
    if text.isascii():
        return text.lower()
    return text.casefold().replace("\u0131", "i").replace("\u0307", "")


#: every keyword of every gate, found in one pass (:class:`~diagnosis.keywords.Keywords`): a rule whose gate words
#: are all absent from the text is never run
_GATE_WORDS = Keywords(w for gate in _GATES.values() if isinstance(gate, tuple) for w in gate)
#: the rules gated by a regex instead of words (no word announces a bare 40-character key)
_ALL_RE = re.compile("|".join(gate.pattern for gate in _GATES.values() if isinstance(gate, re.Pattern)))
_NO_WORDS: frozenset[str] = frozenset()


def _open(gate: tuple[str, ...] | re.Pattern[str], text: str, present: set[str] | frozenset[str] | None) -> bool:
    """Whether a rule's gate is open: one of its words is ``present`` (the gate words in the text), or its regex
    finds something. ``present`` None: every gate is open (:func:`_spans` without the prefilter)."""
    if present is None:
        return True
    if isinstance(gate, tuple):
        return not present.isdisjoint(gate)
    return gate.search(text) is not None


#: rules whose matches can span lines (a PEM block, a YAML "- name: X" / "value: y" pair); the others are
#: run line by line on a long text, and only on the lines that hold one of their gate words
_MULTILINE_RULES = frozenset({"pem-block", "struct-dump", "putty-key"})
#: a text at least this long is scanned line by line
_LONG = 4096


def _rule_spans(
    rules: list[tuple[str, re.Pattern[str], Check | None]],
    text: str,
    present: set[str] | frozenset[str] | None,
    offset: int,
) -> list[tuple[int, int]]:
    """The value spans (shifted by ``offset``) the ``rules`` whose gates are open (:func:`_open`) find in
    ``text``."""
    found: list[tuple[int, int]] = []
    for name, pattern, check in rules:
        if not _open(_GATES[name], text, present):
            continue
        for m in pattern.finditer(text):
            group = next((g for g in ("v", "q", "s", "e") if m.groupdict().get(g) is not None), None)
            if group is None:
                continue
            start, end = m.span(group)
            value = text[start:end]
            end -= len(value) - len(value.rstrip())  # trailing whitespace is not part of a value
            if end <= start or text[start:end] == REDACTED:
                continue
            if check is not None and not check(m, text[start:end]):
                continue
            found.append((start + offset, end + offset))
    return found


_MULTI = [r for r in _RULES if r[0] in _MULTILINE_RULES]
_SINGLE = [r for r in _RULES if r[0] not in _MULTILINE_RULES]


def _spans(text: str, prefilter: bool = True) -> list[tuple[int, int]]:
    """Every (start, end) of a credential value in ``text``, over all rules whose gate is open, on the same text.

    The gate words in the text are found in one pass (:data:`_GATE_WORDS`); a text with none, on which no regex
    gate finds anything, has no credential. A long text (a log) runs the multi-line rules on the whole text and
    every other rule only on the lines that hold one of its gate words, which keeps a 64 KiB log to milliseconds.
    ``prefilter=False`` runs every rule (on every line of a long text): the same spans, only slower (a test
    holds the two equal).
    """
    text = confusable_fold(text)  # same length: a span of the folded text is the span of the original
    low = _fold(text)
    if not prefilter:
        if len(text) < _LONG:
            return _rule_spans(_RULES, text, None, 0)
        found = _rule_spans(_MULTI, text, None, 0)
        offset = 0
        for line in text.split("\n"):
            found += _rule_spans(_SINGLE, line, None, offset)
            offset += len(line) + 1
        return found
    if len(text) < _LONG:
        present = _GATE_WORDS.present(low)
        if not present and _ALL_RE.search(text) is None:
            return []
        return _rule_spans(_RULES, text, present, 0)
    by_line = _GATE_WORDS.by_line(low)
    if not by_line and _ALL_RE.search(text) is None:
        return []
    found = _rule_spans(_MULTI, text, set().union(*by_line.values()), 0)
    offset = 0
    # line i of ``low`` is line i of ``text`` folded: folding is per character and never makes or takes a newline
    for i, line in enumerate(text.split("\n")):
        words = by_line.get(i)
        if words or (line and _ALL_RE.search(line) is not None):
            found += _rule_spans(_SINGLE, line, words or _NO_WORDS, offset)
        offset += len(line) + 1
    return found


def redact(text: str) -> str:
    """Replace credentials in ``text`` with ``[REDACTED]``; other text (key names included) is unchanged."""
    if not text:
        return text
    spans = _spans(text)
    if not spans:
        return text
    spans.sort()
    out: list[str] = []
    last = 0
    cur_start, cur_end = spans[0]
    for start, end in spans[1:]:
        if start <= cur_end:  # overlapping or touching: one mask
            cur_end = max(cur_end, end)
            continue
        out += [text[last:cur_start], REDACTED]
        last = cur_end
        cur_start, cur_end = start, end
    out += [text[last:cur_start], REDACTED, text[cur_end:]]
    return "".join(out)


# Slack control sequences in evidence are defanged everywhere (not only in Block Kit): an injected
# "<!channel>" or "<@U123>" must never ping anyone, wherever the text is pasted later.
_SLACK_SPECIAL: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"<!(?:channel|here|everyone)(?:\|[^>]*)?>", re.I), "[broadcast mention removed]"),
    (re.compile(r"<!subteam\^[^>]*>", re.I), "[group mention removed]"),
    (re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>"), "[user mention removed]"),
    (re.compile(r"<#[A-Z0-9]+(?:\|[^>]*)?>"), "[channel link removed]"),
]
# a link in Slack's own syntax ("<https://x|label>", "<mailto:a@b>"): its label and its address in plain words,
# so no label can hide where a link goes, whatever output the text is pasted from
_SLACK_LINK = re.compile(r"<((?:https?|mailto|ftp|slack|tel|sms|file):[^\s<>|]*)(?:\|([^<>\n]*))?>", re.IGNORECASE)


def _plain_link(m: re.Match[str]) -> str:
    url, label = m.group(1), (m.group(2) or "").strip()
    return f"{label} ({url})" if label and label != url else url


def defang_slack(text: str) -> str:
    """Replace Slack broadcast/user/group mention syntax with a harmless marker, and a Slack link
    (``<url|label>``) with its label and address in plain words (``label (url)``)."""
    if "<" not in text:
        return text
    for pattern, repl in _SLACK_SPECIAL:
        text = pattern.sub(repl, text)
    return _SLACK_LINK.sub(_plain_link, text)


def _sanitize(text: str) -> str:
    return defang_slack(redact(withhold_instructions(strip_control(text))))


# The same short strings (labels, sources, values) are sanitized again and again (every model of a report
# sanitizes its fields, and nested models are validated twice): a small cache makes the repeats free.
_sanitize_short = lru_cache(maxsize=8192)(_sanitize)


def sanitize(text: str) -> str:
    """``strip_control``, ``withhold_instructions``, ``redact``, ``defang_slack``: the one function every
    outgoing string passes (FORMAT.md "What never reaches any output"). Idempotent."""
    return _sanitize_short(text) if len(text) <= 512 else _sanitize(text)


#: the fields of a ``{"name": X, "value": y}`` pair (Kubernetes env, Run:ai environmentVariables/annotations/
#: labels, Go and OSMO dumps): X names y
_PAIR_NAMES = ("name", "key", "Name", "Key", "variable", "envName")
_PAIR_VALUES = frozenset({"value", "Value", "val", "defaultValue", "default"})
#: a command-line flag that takes the next element of an argv list as its value ("--password", "-token")
_FLAG = re.compile(r"--?[^\W\d_][\w.-]*")


def sanitize_tree(value: Any, key: str | None = None) -> Any:
    """:func:`sanitize_obj` that also reads each value with what names it (a captured world, a raw API answer).

    A string is masked whole when what names it names a secret (:func:`secret_key`): its dict key
    (``{"DB_PASSWORD": "x"}``, an annotation or a label), the ``name`` of its ``{"name": ..., "value": ...}``
    pair (an env variable), or the flag before it in an argv list (``["--password", "x"]``); a number there is
    masked too. Every string also passes :func:`sanitize`, and a string holding JSON (an annotation such as
    ``last-applied-configuration``) is read as JSON with the same context rules. ``key``: what names ``value``.
    """
    named = key is not None and secret_key(key)
    if isinstance(value, str):
        return _tree_text(value, named)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return REDACTED if named else value
    if isinstance(value, dict):
        pair = next((value[n] for n in _PAIR_NAMES if isinstance(value.get(n), str)), None)
        out: dict[Any, Any] = {}
        for k, v in value.items():
            context = pair if pair is not None and k in _PAIR_VALUES else str(k)
            out[sanitize(k) if isinstance(k, str) else k] = sanitize_tree(v, context)
        return out
    if isinstance(value, list | tuple):
        items: list[Any] = []
        flag: str | None = None
        for item in value:
            items.append(sanitize_tree(item, flag if flag is not None else key))
            flag = item if isinstance(item, str) and _FLAG.fullmatch(item) and secret_key(item) else None
        return items
    return value


def _tree_text(text: str, named: bool) -> str:
    clean = sanitize(text)
    if named and clean.strip().casefold() not in _NOT_SECRET and not _PLACEHOLDER.fullmatch(clean.strip()):
        return REDACTED  # the whole value of a field that names a secret (an assignment or a "ns/name" too)
    stripped = clean.strip()
    if len(stripped) > 1 and stripped[0] in "{[" and stripped[-1] in "}]":
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return clean
        if isinstance(parsed, dict | list):
            again = sanitize_tree(parsed)
            if again != parsed:
                return json.dumps(again, ensure_ascii=False, separators=(",", ":"))
    return clean


def sanitize_obj(value: Any) -> Any:
    """Recursively sanitize every string in a JSON-like structure (dict, list, tuple, str)."""
    if isinstance(value, str):
        return sanitize(value)
    if isinstance(value, dict):
        return {sanitize_obj(k): sanitize_obj(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [sanitize_obj(v) for v in value]
    return value
