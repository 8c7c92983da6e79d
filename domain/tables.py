"""Imports every table module so :data:`domain.db.metadata` holds the whole schema."""

import domain.accounts.models
import domain.counters.models
import domain.data_loads
import domain.devices.models
import domain.engagement.models
import domain.feed.models
import domain.identity.models
import domain.media.models
import domain.moderation.models
import domain.notifications.models
import domain.outbox.models
import domain.posts.models
import domain.search.models
import domain.social.models  # noqa: F401
from domain.db import metadata

__all__ = ["metadata"]
