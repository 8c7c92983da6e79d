"""Senders of the MailSender port (domain.mail.ports): SMTP through aiosmtplib, and a
logging sender for development without a mail server."""

from adapters.mail.logging_sender import LoggingSender
from adapters.mail.smtp import SmtpConfig, SmtpSender

__all__ = ["LoggingSender", "SmtpConfig", "SmtpSender"]
