"""One masking rule for every place amldist prints or writes a job, an environment or a message.

A value is secret when

- its **name** looks secret. The name is split into words (``snake_case``, ``kebab-case``,
  ``camelCase``; trailing numbers dropped: ``OPENAI_KEY_2``) and is secret when
  - a word holds SECRET, PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL, APIKEY, CONNECTIONSTRING, NETRC or
    PGPASS, or is PWD, CREDS, JWT, SAS, OAUTH, or CONNECTION followed by STRING, or PRIVATE followed by
    KEY (``client_secret``, ``DB_PWD``, ``SAS_URL``, ``ConnectionString``, ``NETRC``, ``PGPASSFILE``,
    ``PRIVATE_KEY_PATH``): a file that holds credentials is masked as they are;
  - or its **last** word is KEY, TOKEN, PASS, PW, PAT, AUTH, AUTHORIZATION, COOKIE, BEARER, HMAC,
    SALT, DSN, OTP, CERT, CERTIFICATE, ASSERTION or PRIVATE, or ends with KEY, TOKEN, SECRET, COOKIE
    (``AccountKey``, ``AZURE_CLIENT_ASSERTION``,
    ``hftoken``, ``DB_PASS``, ``MYSQL_PW``, ``session_cookie``) -- unless the word before KEY or
    TOKEN says what kind of key or token it is in data, not in security (``partition_key``,
    ``sort_key``, ``pad_token``, ``max_token``), or the word is a known look-alike (``tiktoken``);
- or it sits in **text** as a credential: the user part of a URL (``https://user:token@host``,
  ``https://ghp_x@github.com``) or a ``name=value`` pair whose name is secret or ``sig``
  (a SAS URL's ``?sv=...&sig=...``, ``AccountKey=...;`` in a connection string). In Azure
  storage URLs (``wasbs://container@account...``, ``abfss://filesystem@account...``) the part
  before ``@`` is a container, not a user: it is kept unless it carries ``:password``;
- or its **value has the shape of a credential**, whatever its name (:func:`is_secret_value`): a PEM
  private key (``-----BEGIN ... PRIVATE KEY-----``), a JSON object holding a secret-named field or a
  service account (``{"type": "service_account", "private_key": ...}``, a Docker ``auths`` file), or a
  JSON Web Token (three base64url parts, the first two ``eyJ...``). Inside longer text a private key
  block or a token is masked and the rest kept;
- or it is a **value already seen under a secret name** in this process (:func:`remember`,
  :func:`remember_tree`: ``amldist submit`` registers its spec and ``--input`` values first). A
  secret pipeline input passed through a binding to an input of another name, or quoted in an
  error message, is still masked, wherever it is printed or written.

Words only, not substrings, so non-secrets stay visible: ``partition_keys``, ``max_tokens``,
``use_tiktoken``, ``authentication_type``, ``keyboard``, ``author``, ``certainty``,
``job_input_type: literal``. A few harmless names are still masked (``password_policy``); printing
a secret is worse. Masking replaces the secret part with ``***`` and keeps the rest, so that a
masked URL still says where it points. The processes and the service still get the real values;
only what amldist prints or writes to disk is masked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# A word of the name holding one of these is secret, wherever it stands.
SECRET_PARTS = ("SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "APIKEY", "CONNECTIONSTRING", "NETRC",
                "PGPASS")
SECRET_WORDS = frozenset({"PWD", "CREDS", "JWT", "SAS", "OAUTH"})
# Secret as the last word of a name (elsewhere they describe something else: ``pass_rate``, ``salt_rounds``).
SECRET_LAST_WORDS = frozenset({"KEY", "TOKEN", "PASS", "PW", "PAT", "AUTH", "AUTHORIZATION", "COOKIE", "COOKIES",
                               "BEARER", "HMAC", "SALT", "DSN", "OTP", "CERT", "CERTIFICATE",
                               "ASSERTION", "PRIVATE"})
# Two words that name a secret together, wherever they stand (``PRIVATE_KEY_FILE``, ``connection_string_name``).
SECRET_PAIRS = frozenset({("CONNECTION", "STRING"), ("PRIVATE", "KEY")})
SECRET_ENDINGS = ("KEY", "TOKEN", "SECRET", "COOKIE")  # one-word compounds: APIKEY, HFTOKEN, ACCOUNTKEY
# KEY/TOKEN after these words name a key of data or a token of text, not a credential.
DATA_QUALIFIERS = frozenset({
    "PARTITION", "SORT", "PRIMARY", "FOREIGN", "COMPOSITE", "UNIQUE", "GROUP", "LABEL", "METRIC", "DICT", "MAP",
    "HASH", "RANGE", "ROW", "COLUMN", "JOIN", "LOOKUP", "INDEX", "CACHE", "SHARD", "INPUT", "OUTPUT", "TEXT",
    "IMAGE", "PROMPT", "RESPONSE", "TARGET", "FEATURE", "FIELD", "ID", "MAX", "MIN", "NUM", "PAD", "EOS", "BOS",
    "SEP", "CLS", "UNK", "MASK", "START", "END", "SPECIAL", "CONTENT", "ANSWER", "QUESTION", "CONTEXT", "MESSAGE",
    "SAMPLE", "BATCH", "DATASET", "SPLIT", "SEQ", "SEQUENCE", "STOP", "BLOCK", "CHUNK", "DATA", "SEARCH"})
LOOK_ALIKES = frozenset({"TIKTOKEN", "MONKEY", "DONKEY", "TURKEY", "HOCKEY", "WHISKEY", "HOTKEY"})
MASK = "***"
MIN_REMEMBERED = 6  # shorter values ("1", "none", "test") would mask ordinary text everywhere

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")  # snake_case, kebab-case and camelCase words
_URL_USER = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)([^/\s@?#'\"]+)@")
_STORAGE_SCHEMES = ("wasb://", "wasbs://", "abfs://", "abfss://")  # container@account: no user there
_PAIR = re.compile(r"""(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_.-]*)=([^&;\s'"]+)""")
# Fields of a secret input that describe it rather than hold it (a secret input keeps its type shown).
_DESCRIPTIVE = {"type", "jobinputtype", "mode", "optional", "description"}
_known: set[str] = set()  # values seen under secret names (remember)


def _describes(key) -> bool:
    """Whether a field called ``key`` describes a secret input (its type) rather than holding its value."""
    return str(key).replace("_", "").lower() in _DESCRIPTIVE


def _words(name: str) -> list[str]:
    words = [w.upper() for w in _WORDS.findall(name)]
    while words and words[-1].isdigit():
        words.pop()
    return words


def is_secret_name(name) -> bool:
    """True when a variable, input or field called ``name`` must not be printed (module docstring)."""
    words = _words(str(name))
    if not words:
        return False
    if any(part in word for word in words for part in SECRET_PARTS) or SECRET_WORDS.intersection(words):
        return True
    if SECRET_PAIRS.intersection(zip(words, words[1:])):
        return True
    last = words[-1]
    if last in LOOK_ALIKES:
        return False
    if last in ("KEY", "TOKEN", "KEYS", "TOKENS") and len(words) > 1 and words[-2] in DATA_QUALIFIERS:
        return False
    if last in SECRET_LAST_WORDS:
        return True
    return any(last.endswith(end) and last != end for end in SECRET_ENDINGS)


_PEM_KEY = re.compile(r"-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*-----|\Z)", re.S)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")
MAX_JSON_CHARS = 1 << 20  # a credentials file is a few KB; larger JSON is data, not parsed to look for one


def is_secret_value(value) -> bool:
    """Whether a value has the shape of a credential whatever its name: a PEM private key, a JSON object
    with a secret-named field or of ``"type": "service_account"``, a JSON Web Token (module docstring)."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    if text.startswith("-----BEGIN") and _PEM_KEY.fullmatch(text) or _JWT.fullmatch(text):
        return True
    if not (text.startswith("{") and text.endswith("}")) or len(text) > MAX_JSON_CHARS:
        return False
    import json

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return _holds_secret(data)


def _holds_secret(data, depth: int = 0) -> bool:
    """A parsed JSON value with a secret-named field holding something, or a service account, at any depth."""
    if depth > 20:
        return False
    if isinstance(data, dict):
        if data.get("type") == "service_account":
            return True
        return any((is_secret_name(key) and value not in (None, "", {}, [])) or _holds_secret(value, depth + 1)
                   for key, value in data.items())
    return isinstance(data, list) and any(_holds_secret(item, depth + 1) for item in data)


_BINDING_ONLY = re.compile(r"\s*(\$\{\{[^{}]*\}\}\s*)+")


def remember(value) -> None:
    """Mask ``value`` from now on wherever it appears in text this process prints or writes.

    A binding (``${{parent.inputs.api_key}}``) names where a value comes from, it holds none: it is not
    remembered (it would mask the same reference in every other step, depending on which was seen first)."""
    if isinstance(value, str) and len(value.strip()) >= MIN_REMEMBERED and not _BINDING_ONLY.fullmatch(value):
        _known.add(value)


def remember_tree(data, *, secret: bool = False) -> None:
    """:func:`remember` every value under a secret name in a JSON-like tree (a spec, ``--input`` values)."""
    if isinstance(data, dict):
        for key, value in data.items():
            below = secret or is_secret_name(key)
            if not (below and _describes(key)):
                remember_tree(value, secret=below)
    elif isinstance(data, list):
        for item in data:
            remember_tree(item, secret=secret)
    elif secret:
        remember(data)


def is_known_secret(value) -> bool:
    return isinstance(value, str) and value in _known


def shown(name, value, limit: int = 60) -> str:
    """``repr(value)`` for a message (cut to ``limit`` characters), or ``***`` when ``name`` looks
    secret or the value is a known secret."""
    if value not in (None, "") and (is_secret_name(name) or is_known_secret(value) or is_secret_value(value)):
        return MASK
    text = mask_text(repr(value))
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def is_secret_path(path) -> bool:
    """Whether the value at ``path`` (keys from the document's top) sits under a secret name and is
    not one of its describing fields (``inputs.api_key.default``: yes; ``inputs.api_key.type``: no)."""
    keys = [str(part) for part in path or () if isinstance(part, str)]
    if not any(is_secret_name(key) for key in keys):
        return False
    return not (keys and _describes(keys[-1]))


def _url_user(match: re.Match) -> str:
    scheme, user = match.group(1), match.group(2)
    if scheme.lower() in _STORAGE_SCHEMES:
        return match.group() if ":" not in user else f"{scheme}{user.split(':', 1)[0]}:{MASK}@"
    return scheme + MASK + "@"


def mask_text(text):
    """``text`` with credentials inside it replaced by ``***`` (URL users, secret ``name=value``
    pairs, SAS signatures, values remembered as secret); anything that is not a string is returned as is."""
    if not isinstance(text, str):
        return text
    if is_secret_value(text):
        remember(text)
        return MASK
    if "PRIVATE KEY" in text:
        text = _PEM_KEY.sub(MASK, text)
    if "eyJ" in text:
        text = _JWT.sub(MASK, text)
    for value in sorted(_known, key=len, reverse=True):
        if value in text:
            text = text.replace(value, MASK)
    text = _URL_USER.sub(_url_user, text)

    def pair(match: re.Match) -> str:
        name = match.group(1)
        if name.lower() == "sig" or is_secret_name(name):
            return f"{name}={MASK}"
        return match.group()

    return _PAIR.sub(pair, text)


def mask_value(name: str, value):
    """``value``, or ``***`` when ``name`` looks secret (an empty value stays empty, a secret one is
    remembered); a value kept is still cleaned of credentials inside it (:func:`mask_text`)."""
    if value in (None, ""):
        return value
    if is_secret_name(name) and not is_binding(value):
        remember(value)
        return MASK
    return mask_text(value)


def mask_env(env: Mapping[str, object] | None) -> dict:
    """A copy of ``env`` with secret values masked (:func:`mask_value`); order kept."""
    return {name: mask_value(name, value) for name, value in (env or {}).items()}


def mask_tree(data, *, secret: bool = False):
    """A deep copy of a JSON-like tree (a job, a REST body) with every secret masked.

    A key that looks secret masks every value below it (a secret input ``{type: string,
    default: x}`` keeps its type and shows ``default: ***``); every other string is cleaned
    with :func:`mask_text`. Mapping keys are kept as written.
    """
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            below = secret or is_secret_name(key)
            if below and _describes(key) and not isinstance(value, (dict, list)):
                out[key] = value
            else:
                out[key] = mask_tree(value, secret=below)
        return out
    if isinstance(data, list):
        return [mask_tree(item, secret=secret) for item in data]
    if secret and data not in (None, "") and not isinstance(data, bool) and not is_binding(data):
        remember(data)
        return MASK
    return mask_text(data)


def is_binding(value) -> bool:
    """A value that is only ``${{...}}`` references (``${{parent.inputs.key}}``): it names where a value comes
    from and holds none, so it is shown under a secret name too (what it refers to stays masked where it is)."""
    return isinstance(value, str) and _BINDING_ONLY.fullmatch(value) is not None
