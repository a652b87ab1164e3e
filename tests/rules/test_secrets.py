"""The one masking rule: secret names, credentials inside URLs and connection strings."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from amldist.rules.secrets import (MASK, is_secret_name, is_secret_value, mask_env, mask_text, mask_tree, remember_tree,
                                   shown)


@pytest.mark.parametrize("name", [
    "AZURE_STORAGE_KEY", "hf_token", "DB_PASSWORD", "SAS_URL", "MYSQL_PASSWD", "DB_PWD", "pwd", "ADO_PAT",
    "GitHubPat", "AZURE_CLIENT_CREDENTIAL", "OAUTH_CLIENT", "Authorization", "SSH_PRIVATE", "TLS_CERT",
    "jwt", "GPG_PASSPHRASE", "STORAGE_CONNECTION_STRING", "client_secret", "apiKey",
])
def test_secret_names_are_recognised(name):
    assert is_secret_name(name)
    assert mask_env({name: "v"}) == {name: MASK}


@pytest.mark.parametrize("name", ["PATH", "PYTHONPATH", "PATTERN", "SPATIAL_DIM", "OLDPWD_DIR", "EPOCHS", "LR"])
def test_ordinary_names_are_shown(name):
    assert not is_secret_name(name)
    assert mask_env({name: "/usr/bin"}) == {name: "/usr/bin"}


@pytest.mark.parametrize("text, secret, kept", [
    ("https://user:hunter2@example.com/repo.git", "hunter2", "example.com/repo.git"),
    ("git clone https://ghp_abc123@github.com/o/r", "ghp_abc123", "github.com/o/r"),
    ("https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=AbC%2Bd", "AbC%2Bd", "sv=2022-11-02"),
    ("DefaultEndpointsProtocol=https;AccountName=a;AccountKey=Zm9v==;EndpointSuffix=x", "Zm9v==", "AccountName=a"),
    ("python t.py --token=abc123 --lr=0.1", "abc123", "--lr=0.1"),
])
def test_credentials_inside_text_are_masked_and_the_rest_kept(text, secret, kept):
    masked = mask_text(text)
    assert secret not in masked and kept in masked and MASK in masked


@given(user=st.text(st.sampled_from("abcXYZ019_-."), min_size=1, max_size=12),
       password=st.text(st.sampled_from("abcXYZ019_-.~!$&()*+,;="), min_size=1, max_size=24),
       sig=st.text(st.sampled_from("abcXYZ019%+/="), min_size=1, max_size=24))
def test_no_url_credential_survives_masking(user, password, sig):
    assume(MASK not in password)  # "***" itself cannot be told from its mask
    for text in (f"https://{user}:{password}@host/p", f"https://{password}@host/p", f"https://h/p?sv=1&sig={sig}"):
        masked = mask_text(f"path: {text} and more")
        assert "host/p" in masked or "h/p" in masked
        assert f":{password}@" not in masked and f"/{password}@" not in masked and f"sig={sig}" not in masked


def test_a_job_tree_masks_secret_inputs_env_and_urls_but_keeps_their_types_and_other_fields():
    job = {
        "command": "python t.py --key ${{inputs.api_key}}",
        "environment_variables": {"HF_TOKEN": "hf_x", "DB_PWD": "pw", "SEED": "1", "EMPTY_SECRET": ""},
        "inputs": {"api_key": {"type": "string", "default": "sk-1"}, "lr": 0.1, "max_tokens": "n1",
                   "data": {"type": "uri_folder", "path": "https://u:p4ss@h/d"}},
        "resources": {"instance_count": 2},
    }
    masked = mask_tree(job)
    assert masked["environment_variables"] == {"HF_TOKEN": MASK, "DB_PWD": MASK, "SEED": "1", "EMPTY_SECRET": ""}
    assert masked["inputs"]["api_key"] == {"type": "string", "default": MASK}
    assert masked["inputs"]["lr"] == 0.1 and masked["inputs"]["max_tokens"] == "n1"  # a count of tokens, shown
    assert masked["inputs"]["data"] == {"type": "uri_folder", "path": "https://***@h/d"}
    assert masked["command"] == job["command"] and masked["resources"] == {"instance_count": 2}
    assert job["inputs"]["api_key"]["default"] == "sk-1"  # a copy: the job itself is untouched


# Real names and values from public Azure ML specs: what must stay visible beside what must be masked.
NOT_SECRET_NAMES = ["partition_keys", "use_tiktoken", "authentication_type", "job_input_type", "max_tokens",
                    "num_tokens", "tokenizer_name", "pad_token", "primary_key_column", "sort_key", "keyboard",
                    "author", "certainty", "pass_rate", "salt_rounds", "cookie_policy", "PATH", "OLDPWD_DIR",
                    "KEY_VAULT_URL", "AZURE_CLIENT_ID"]
SECRET_NAMES = ["DB_PASS", "db_pw", "MYSQL_PW", "COOKIE", "session_cookie", "BEARER", "HMAC", "SALT", "password_salt",
                "SENTRY_DSN", "apikey", "AccountKey", "OPENAI_API_KEY_2", "hftoken", "refresh_token", "SIGNING_KEY",
                "ConnectionString", "GITHUB_PAT", "jwt", "OTP",
                # files and forms that hold credentials (issue 24): a .netrc, libpq's password file, a private key,
                # a client assertion (a signed JWT), a client certificate, *_PASS / *_PASSWD
                "NETRC", "netrc_path", "PGPASSFILE", "PGPASS", "PRIVATE_KEY_FILE", "ssh_private_key_path",
                "AZURE_CLIENT_ASSERTION", "CLIENT_CERTIFICATE", "SMTP_PASS", "LDAP_PASSWD", "RedisPass",
                "htpasswd", "GOOGLE_APPLICATION_CREDENTIALS"]
# Names near those words that are no secret: masking them would hide what a job does.
NOT_SECRET_NAMES += ["auth_mode", "private_network", "certificate_count", "passes", "bypass_cache", "compass_heading",
                     "num_passes", "key_column", "network", "assertion_level"]


@pytest.mark.parametrize("name", NOT_SECRET_NAMES)
def test_non_secret_names_from_real_specs_are_shown(name):
    assert not is_secret_name(name)
    assert mask_tree({"inputs": {name: "visible-value"}}) == {"inputs": {name: "visible-value"}}


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names_beyond_key_and_token_are_masked(name):
    assert is_secret_name(name)
    assert mask_env({name: "hunter2-value"}) == {name: MASK}


@pytest.mark.parametrize("text", [
    "wasbs://mycontainer@myaccount.blob.core.windows.net/data/train",
    "abfss://filesystem@account.dfs.core.windows.net/folder",
    "azureml://datastores/workspaceblobstore/paths/data/",
])
def test_storage_urls_keep_their_container(text):
    assert mask_text(text) == text


def test_a_storage_url_with_a_password_is_still_masked():
    assert mask_text("wasbs://container:s3cr3t@account.blob.core.windows.net/x") == (
        "wasbs://container:***@account.blob.core.windows.net/x")


def test_a_secret_input_descriptor_keeps_its_type_in_a_rest_body():
    body = {"inputs": {"api_key": {"job_input_type": "literal", "value": "sk-body-123456"}}}
    assert mask_tree(body) == {"inputs": {"api_key": {"job_input_type": "literal", "value": MASK}}}


def test_a_secret_value_stays_masked_under_another_name_and_in_messages():
    remember_tree({"inputs": {"api_key": "sk-LIVE-bound-1234"}, "lr": "0.00001234"})
    step = {"inputs": {"step_argument": "sk-LIVE-bound-1234", "lr": "0.00001234"}}
    assert mask_tree(step) == {"inputs": {"step_argument": MASK, "lr": "0.00001234"}}
    assert mask_text("--x sk-LIVE-bound-1234 --y 2") == "--x *** --y 2"
    assert shown("anything", "sk-LIVE-bound-1234") == MASK and shown("db_pass", "short") == MASK
    assert shown("epochs", 3) == "3"


PEM = "-----BEGIN {kind}PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END {kind}PRIVATE KEY-----\n"
SERVICE_ACCOUNT = ('{"type": "service_account", "project_id": "p", "private_key_id": "abc", '
                   '"private_key": "' + PEM.format(kind="").replace("\n", "\\n") + '", "client_email": "x@p.iam"}')
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhcHAiLCJhdWQiOiJ4In0.c2lnbmF0dXJlLWJ5dGVz"


@pytest.mark.parametrize("value", [
    PEM.format(kind=""), PEM.format(kind="RSA "), PEM.format(kind="OPENSSH "), PEM.format(kind="ENCRYPTED "),
    SERVICE_ACCOUNT, '{"auths": {"myregistry.azurecr.io": {"auth": "dXNlcjpwYXNz"}}}',
    '{"client_id": "c", "client_secret": "s3cr3t"}', '{"a": {"b": {"token": "t"}}}', JWT,
])
def test_a_value_shaped_like_a_credential_is_masked_under_any_name(value):
    assert is_secret_value(value)
    assert mask_env({"SOME_SETTING": value}) == {"SOME_SETTING": MASK}
    assert mask_tree({"inputs": {"config": value}}) == {"inputs": {"config": MASK}}
    assert shown("config", value) == MASK


@pytest.mark.parametrize("value", [
    '{"lr": 0.1, "epochs": 3}', '{"tokenizer": "gpt2", "max_tokens": 128}', '{"api_key": ""}', "{not json}",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", "eyJ.not.a.token", "hello world",
])
def test_ordinary_values_are_no_credential(value):
    assert not is_secret_value(value)
    assert mask_env({"SOME_SETTING": value}) == {"SOME_SETTING": value}


def test_a_private_key_or_a_token_inside_text_is_masked_and_the_rest_kept():
    text = f"echo {PEM.format(kind='RSA ').strip()} > id_rsa && curl -H 'Authorization: Bearer {JWT}' https://h/x"
    masked = mask_text(text)
    assert "MIIEvQ" not in masked and JWT not in masked
    assert masked.startswith("echo *** > id_rsa && curl") and masked.endswith("https://h/x")
