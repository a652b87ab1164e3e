"""Calls into azure-ai-ml, with Azure's failures as one-line :class:`~amldist.errors.UserError`: no token or
no workspace (exit 2, with the ways to set them), the service refusing a request (exit 1, with its
status and message), Azure unreachable (exit 1). One mapping for submit and every job verb."""

from __future__ import annotations

from amldist.errors import INSTALL_AZURE, UserError

SIGN_IN_HINT = (
    "sign in with `az login` (or `az login --use-device-code`), or set AZURE_CLIENT_ID, AZURE_TENANT_ID "
    "and AZURE_CLIENT_SECRET for a service principal; DefaultAzureCredential tries these in turn"
)


def require_azure(*, need_identity: bool) -> None:
    """azure-ai-ml (and azure-identity) are an extra: say how to get them, not a traceback."""
    import importlib

    for module, package in (("azure.ai.ml", "azure-ai-ml"), ("azure.identity", "azure-identity")):
        if module == "azure.identity" and not need_identity:
            continue
        try:
            importlib.import_module(module)
        except ImportError:
            raise UserError(f"submitting to Azure ML (and its --dry-run) needs {package}, which is not installed",
                            hint=f"{INSTALL_AZURE}; or run the job on this machine with --local") from None


def _first_line(text) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else str(text)


def azure_call(call, workspace):
    """Run one azure-ai-ml call; Azure's failures become one-line UserErrors."""
    from azure.core.exceptions import ClientAuthenticationError, HttpResponseError, ServiceRequestError

    try:
        return call()
    except Exception as exc:  # unwrap azure-ai-ml's wrappers (AssetException "Error with code: ...")
        cause = exc
        while cause is not None and not isinstance(
            cause, (ClientAuthenticationError, HttpResponseError, ServiceRequestError)
        ):
            cause = cause.__cause__
        if isinstance(cause, ClientAuthenticationError):
            raise UserError(f"cannot get an Azure access token: {_first_line(cause.message)}",
                            hint=SIGN_IN_HINT, exit_code=2) from None
        if isinstance(cause, HttpResponseError):
            status = cause.status_code
            code = getattr(cause.error, "code", None) if getattr(cause, "error", None) else None
            detail = getattr(cause.error, "message", None) if getattr(cause, "error", None) else None
            hint = f"check the workspace: {workspace.describe()}" if status in (401, 403, 404) else None
            raise UserError(
                f"Azure ML refused the request ({status}{' ' + code if code else ''}): "
                f"{_first_line(detail or cause.message or cause.reason)}",
                hint=hint, exit_code=1) from None
        if isinstance(cause, ServiceRequestError):
            raise UserError(f"cannot reach Azure: {_first_line(cause.message)}",
                            hint="check the network connection and proxy settings", exit_code=1) from None
        from azure.ai.ml.exceptions import JobException, MlException

        if isinstance(exc, MlException) and not isinstance(exc, JobException):
            raise UserError(f"azure-ai-ml: {' '.join(str(exc.message).split())}", exit_code=1) from None
        raise
