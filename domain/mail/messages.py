"""The texts of the mails Roost sends (plain text, English)."""

from __future__ import annotations

import datetime as dt
from urllib.parse import quote

from domain.mail.ports import MailMessage


def _link(template: str | None, token: str) -> str:
    return template.replace("{token}", quote(token, safe="")) if template else ""


def _lasts(ttl: dt.timedelta) -> str:
    minutes = round(ttl.total_seconds() / 60)
    if minutes % 60 == 0 and minutes >= 60:
        hours = minutes // 60
        return f"{hours} hour{'s' if hours != 1 else ''}"
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


def verification_mail(
    to: str, username: str, token: str, *, link: str | None, ttl: dt.timedelta
) -> MailMessage:
    """The mail asking ``username`` to confirm ``to``: link (if any) and code, valid ``ttl``."""
    url = _link(link, token)
    lines = [
        f"Hello {username},",
        "",
        "please confirm that this is your e-mail address for Roost.",
        "",
        *(
            [f"Open this link: {url}", "", "or enter this code in the app:"]
            if url
            else ["Enter this code in the app:"]
        ),
        f"    {token}",
        "",
        f"It works once and for {_lasts(ttl)}. If you did not sign up for Roost, ignore",
        "this mail: nothing happens without the code.",
    ]
    return MailMessage(to=to, subject="Confirm your e-mail address", text="\n".join(lines))


def reset_mail(
    to: str, username: str, token: str, *, link: str | None, ttl: dt.timedelta
) -> MailMessage:
    """The password reset mail: link (if any) and code, valid ``ttl``."""
    url = _link(link, token)
    lines = [
        f"Hello {username},",
        "",
        "someone (we hope you) asked to reset the password of your Roost account.",
        "",
        *(
            [f"Open this link: {url}", "", "or enter this code in the app:"]
            if url
            else ["Enter this code in the app:"]
        ),
        f"    {token}",
        "",
        f"It works once and for {_lasts(ttl)}; setting a new password signs you out",
        "everywhere. If you did not ask, ignore this mail: your password stays as it is.",
    ]
    return MailMessage(to=to, subject="Reset your Roost password", text="\n".join(lines))
