"""``email:ops@example.com[,boss@example.com]``: each archive sent as an attachment
through ``[backup.smtp]`` (STARTTLS, SSL or plain, as ``security`` says).

Mail is for small workspaces: an archive above ``[backup] email_max_mb`` is refused
before connecting. It is write-only: nothing here can list, fetch or delete what was
sent, so retention and restores need another destination.

``send_email`` is the one SMTP sender of the backup package (failure notices use it).
"""

from __future__ import annotations

import re
import smtplib
import socket
import ssl
from collections.abc import Sequence
from email.message import EmailMessage
from pathlib import Path
from typing import NoReturn

from autorag.backup.destinations.base import (
    DestinationError,
    DestinationRefused,
    DestinationUnsupported,
    StoredArchive,
    check_name,
    scrub,
)
from autorag.backup.destinations.urls import DestinationUrl
from autorag.config import BackupSettings, SmtpSettings
from autorag.errors import InvalidInput, PayloadTooLarge

MB = 1024 * 1024
# One address: no spaces, no control characters (a header injection), one '@'.
_ADDRESS = re.compile(r"^[^@\s,;<>\"\x00-\x1f\x7f]+@[^@\s,;<>\"\x00-\x1f\x7f]+$")
_ATTACHMENT_TYPE = ("application", "octet-stream")


class EmailDestination:
    def __init__(self, recipients: Sequence[str], settings: BackupSettings, label: str) -> None:
        self.recipients = tuple(recipients)
        self.label = label
        self._smtp = settings.smtp
        self._max_bytes = int(settings.email_max_mb * MB)

    def put(self, local: Path, name: str) -> None:
        check_name(name)
        size = local.stat().st_size
        if size > self._max_bytes:
            raise PayloadTooLarge(
                f"{self.label}: the backup is {size / MB:.1f} MB, above [backup] email_max_mb "
                f"({self._max_bytes / MB:g} MB): use another destination, or raise the limit "
                "if the mail server takes larger messages"
            )
        send_email(
            self._smtp,
            self.recipients,
            subject=f"AutoRAG backup {name}",
            body=(
                f"The attached file is an encrypted AutoRAG backup ({size:,} bytes).\n"
                "Restore it with `autorag backup restore FILE`; it opens only with the "
                "workspace's encryption key.\n"
            ),
            attachment=(name, local),
            where=self.label,
        )

    def list(self) -> list[StoredArchive]:
        self._unsupported("list the backups it sent")

    def get(self, name: str, local: Path) -> None:
        check_name(name)
        self._unsupported(f"fetch {name!r}: save the attachment from the e-mail instead")

    def delete(self, name: str) -> None:
        check_name(name)
        self._unsupported(f"delete {name!r}: delete the e-mail instead")

    def _unsupported(self, what: str) -> NoReturn:
        raise DestinationUnsupported(
            f"the email destination keeps no list of what it sent ({self.label}): it cannot {what}"
        )


def send_email(
    smtp: SmtpSettings,
    recipients: Sequence[str],
    *,
    subject: str,
    body: str,
    attachment: tuple[str, Path] | None = None,
    where: str = "the SMTP server",
) -> None:
    """Send one message through ``smtp``; ``DestinationError``/``DestinationRefused``
    with the server's own words (the password masked) when it fails.

    The attachment is read whole: MIME encodes it in memory, which is why e-mailed
    archives are size-limited.
    """
    if not smtp.host:
        raise InvalidInput(f"{where}: no SMTP server: set [backup.smtp] host")
    message = EmailMessage()
    message["From"] = smtp.sender or f"autorag@{socket.getfqdn()}"
    message["To"] = ", ".join(recipients)
    message["Subject"] = subject
    message.set_content(body)
    if attachment is not None:
        filename, path = attachment
        maintype, subtype = _ATTACHMENT_TYPE
        message.add_attachment(
            path.read_bytes(), maintype=maintype, subtype=subtype, filename=filename
        )
    password = smtp.password.get_secret_value() if smtp.password else None
    try:
        with _connect(smtp) as server:
            if smtp.username:
                server.login(smtp.username, password or "")
            server.send_message(message)
    except smtplib.SMTPAuthenticationError as exc:
        reason = scrub(str(exc), [password])
        raise DestinationRefused(
            f"{where}: {smtp.host} refused the login ({reason}): check [backup.smtp] "
            "username and password"
        ) from None
    except (smtplib.SMTPRecipientsRefused, smtplib.SMTPSenderRefused) as exc:
        raise DestinationRefused(
            f"{where}: {smtp.host} refused the message ({scrub(str(exc), [password])})"
        ) from None
    except smtplib.SMTPNotSupportedError as exc:  # no STARTTLS, or no AUTH, on offer
        raise DestinationRefused(
            f"{where}: {smtp.host}: {exc}: check [backup.smtp] security and port"
        ) from None
    except ssl.SSLCertVerificationError as exc:
        raise DestinationRefused(
            f"{where}: the TLS certificate of {smtp.host} is not trusted ({exc}); a private "
            "CA's file can be named in SSL_CERT_FILE"
        ) from None
    except (smtplib.SMTPException, OSError) as exc:
        reason = scrub(f"{type(exc).__name__}: {exc}", [password])
        raise DestinationError(f"{where}: sending through {smtp.host} failed ({reason})") from None


def _connect(smtp: SmtpSettings) -> smtplib.SMTP:
    host = smtp.host or ""
    if smtp.security == "ssl":
        context = ssl.create_default_context()
        return smtplib.SMTP_SSL(host, smtp.port, timeout=smtp.timeout_s, context=context)
    server = smtplib.SMTP(host, smtp.port, timeout=smtp.timeout_s)
    if smtp.security == "starttls":
        try:
            server.starttls(context=ssl.create_default_context())
        except BaseException:
            server.close()
            raise
    return server


def parse_recipients(text: str) -> list[str]:
    """``a@b.c,d@e.f`` as addresses; ``InvalidInput`` naming one that is not an address."""
    recipients = [part.strip() for part in text.split(",") if part.strip()]
    if not recipients:
        raise InvalidInput("an email: backup destination names no address (email:ops@example.com)")
    for address in recipients:
        if not _ADDRESS.match(address):
            raise InvalidInput(f"{address!r} is not an e-mail address")
    return recipients


def open_email(
    url: DestinationUrl, settings: BackupSettings, default_dir: Path
) -> EmailDestination:
    if url.rest.startswith("//"):
        raise InvalidInput(
            f"write an e-mail destination as email:ops@example.org, not {url.text!r}"
        )
    recipients = parse_recipients(url.rest)
    if not settings.smtp.host:
        raise InvalidInput(
            f"backup destination {url.text!r} needs an SMTP server: set [backup.smtp] host"
        )
    return EmailDestination(recipients, settings, f"email:{','.join(recipients)}")
