"""API tokens for the REST API: `Authorization: Token <key>` (or `Bearer <key>`)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from .accounts import api_token_authenticate


class TokenInvalid(exceptions.APIException):
    """A token that is malformed, unknown or revoked: 401 on every endpoint.
    (DRF turns its own AuthenticationFailed into a 403 wherever the session,
    which has no challenge, is the first authentication class.)"""

    status_code = 401
    default_code = "authentication_failed"
    default_detail = "The token is not valid or has been revoked."


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keywords = ("token", "bearer")

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode("latin-1").lower() not in self.keywords:
            return None
        if len(header) != 2:
            raise TokenInvalid(
                "Give the token as 'Authorization: Token <key>', without spaces in the key."
            )
        try:
            key = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise TokenInvalid("The token is not valid.") from None
        token = api_token_authenticate(key=key)
        if token is None:
            raise TokenInvalid("The token is not valid or has been revoked.")
        return token.user, token

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (not 403) to a request without credentials.
        return 'Token realm="api"'


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """Describes the token in the OpenAPI schema (and the docs' Authorize button)."""

    target_class = ApiTokenAuthentication
    name = "apiToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <key>`; create keys on /account/.",
        }
