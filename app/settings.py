"""Settings from the environment (pydantic-settings); every knob of docs/design.md lives here."""

from __future__ import annotations

import datetime as dt
import hmac
import os
import socket
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict
from sqlalchemy.engine import make_url

from adapters.feedstore import FeedRedis, open_feed_redis
from adapters.jwt_codec import JwtCodec
from adapters.mail import SmtpConfig
from app.document_limits import DocumentLimits
from domain.accounts.config import AccountsConfig
from domain.explore.config import ExploreConfig
from domain.feed.config import FeedConfig
from domain.feed.ranking import RankingConfig
from domain.identity.tokens import TokenConfig
from domain.mail.config import LIMITED_ACTIONS, MailConfig
from domain.media.config import MediaConfig
from domain.notifications.config import NotificationConfig
from domain.search.config import SearchConfig

ROOT = Path(__file__).resolve().parent.parent

#: The real follow graph shipped with Roost (data/README.md: source, citation, figures).
DEFAULT_GRAPH_PATH = ROOT / "data" / "soc-Slashdot0902.txt.gz"
#: Its md5, as data/README.md gives it.
DEFAULT_GRAPH_MD5 = "2c5c97673b6b079b802b1a4d5c2395d0"

#: Development-only signing secret; `roost run` refuses it when ROOST_ENV=production.
DEV_JWT_SECRET = "roost-development-secret-change-me-0123456789"


#: Folders of the repository that hold no source (scanned for committed secrets).
_NOT_SOURCE = frozenset(
    {".git", ".venv", ".data", "data", "node_modules", "__pycache__", "build", "dist"}
)
_SOURCE_SUFFIXES = frozenset(
    {".py", ".md", ".yml", ".yaml", ".toml", ".cfg", ".ini", ".txt", ".json", ".sh", ".mako"}
)


def secret_in_repository(secret: str, root: Path = ROOT) -> bool:
    """Whether ``secret`` is written in a source file under ``root`` (never ``.env``,
    the operator's and git-ignored). Reads a few hundred files: production start-up only."""
    needle = secret.encode()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _NOT_SOURCE and not d.endswith(".egg-info")]
        for name in files:
            path = Path(folder, name)
            if path.suffix not in _SOURCE_SUFFIXES and name not in ("Makefile", "Dockerfile"):
                continue
            try:
                if path.stat().st_size <= 1_000_000 and needle in path.read_bytes():
                    return True
            except OSError:
                continue
    return False


class FileSettings(PydanticBaseSettingsSource):
    """Any setting ``X`` given as ``X_FILE``: the path of a file holding its value
    (a trailing newline dropped), as Docker and Compose mount secrets; ``X_FILE`` wins
    over ``X``. A file that cannot be read is a settings error."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # __call__ reads them all

    def __call__(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name, field in self.settings_cls.model_fields.items():
            alias = field.alias or name
            path = os.environ.get(f"{alias}_FILE")
            if not path:
                continue
            try:
                values[alias] = Path(path).read_text(encoding="utf-8").rstrip("\r\n")
            except OSError as exc:
                raise ValueError(f"{alias}_FILE={path}: {exc.strerror or exc}") from exc
        return values


class Settings(BaseSettings):
    """Roost's configuration; docs/operations/configuration.md gives each setting's
    meaning. Unset DATABASE_URL / REDIS_URL mean "embedded servers"."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then ``X_FILE`` files, then the environment, then ``.env``."""
        return (
            init_settings,
            FileSettings(settings_cls),
            env_settings,
            dotenv_settings,
            file_secret_settings,
        )

    env: str = Field("development", alias="ROOST_ENV")
    database_url: str | None = Field(None, alias="DATABASE_URL")
    database_password: str | None = Field(None, alias="DATABASE_PASSWORD")
    database_replica_urls: str | None = Field(None, alias="DATABASE_REPLICA_URLS")
    replica_max_lag_s: float = Field(5.0, gt=0, le=300, alias="REPLICA_MAX_LAG_S")
    redis_url: str | None = Field(None, alias="REDIS_URL")
    feed_redis_url: str | None = Field(None, alias="FEED_REDIS_URL")
    feed_redis_cluster_nodes: str | None = Field(None, alias="FEED_REDIS_CLUSTER_NODES")
    data_dir: Path = Field(ROOT / ".data", alias="ROOST_DATA_DIR")

    host: str = Field("127.0.0.1", alias="HOST")
    port: int = Field(8000, alias="PORT")
    api_workers: int | None = Field(None, ge=1, le=256, alias="API_WORKERS")
    api_access_log: bool | None = Field(None, alias="API_ACCESS_LOG")
    api_header_timeout_s: float = Field(10.0, gt=0, le=600, alias="API_HEADER_TIMEOUT_S")
    api_body_timeout_s: float = Field(20.0, gt=0, le=3600, alias="API_BODY_TIMEOUT_S")
    api_body_min_rate: int = Field(500, ge=1, alias="API_BODY_MIN_RATE")
    api_keepalive_timeout_s: float = Field(5.0, gt=0, le=600, alias="API_KEEPALIVE_TIMEOUT_S")
    api_limit_concurrency: int | None = Field(None, ge=1, alias="API_LIMIT_CONCURRENCY")
    forwarded_allow_ips: str = Field("", alias="FORWARDED_ALLOW_IPS")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", alias="ROOST_LOG_LEVEL")

    jwt_secret: str = Field(DEV_JWT_SECRET, alias="JWT_SECRET")
    access_token_minutes: int = Field(15, alias="ACCESS_TOKEN_MINUTES")
    refresh_token_days: int = Field(30, alias="REFRESH_TOKEN_DAYS")
    refresh_grace_s: float = Field(10.0, ge=0, le=300, alias="REFRESH_GRACE_S")

    counter_shards: int = Field(16, ge=1, le=256, alias="COUNTER_SHARDS")
    db_pool_size: int = Field(20, ge=1, alias="DB_POOL_SIZE")
    db_max_overflow: int = Field(0, ge=0, alias="DB_MAX_OVERFLOW")
    db_connect_timeout_s: float = Field(5.0, gt=0, alias="DB_CONNECT_TIMEOUT_S")
    db_pool_timeout_s: float = Field(10.0, gt=0, alias="DB_POOL_TIMEOUT_S")
    redis_connect_timeout_s: float = Field(2.0, gt=0, alias="REDIS_CONNECT_TIMEOUT_S")

    metrics_host: str = Field("127.0.0.1", alias="METRICS_HOST")
    metrics_port: int = Field(9100, ge=0, le=65535, alias="METRICS_PORT")
    metrics_token: str | None = Field(None, alias="METRICS_TOKEN")
    cors_allow_origins: str = Field("", alias="CORS_ALLOW_ORIGINS")
    graphiql_enabled: bool | None = Field(None, alias="GRAPHIQL_ENABLED")
    introspection_enabled: bool | None = Field(None, alias="INTROSPECTION_ENABLED")
    cors_max_age_s: int = Field(600, ge=0, alias="CORS_MAX_AGE_S")
    cors_allow_headers: str = Field("", alias="CORS_ALLOW_HEADERS")

    max_page_size: int = Field(100, alias="MAX_PAGE_SIZE")
    post_edit_window_s: int = Field(86_400, ge=0, alias="POST_EDIT_WINDOW_S")
    max_query_depth: int = Field(12, alias="MAX_QUERY_DEPTH")
    max_aliases: int = Field(30, alias="MAX_ALIASES")
    max_tokens: int = Field(4000, alias="MAX_TOKENS")
    max_field_merges: int = Field(2_000, ge=0, alias="MAX_FIELD_MERGES")
    max_expanded_fields: int = Field(10_000, ge=1, alias="MAX_EXPANDED_FIELDS")
    execution_plans: bool = Field(True, alias="EXECUTION_PLANS")
    max_request_bytes: int = Field(1_048_576, ge=1_024, alias="MAX_REQUEST_BYTES")
    max_json_depth: int = Field(32, ge=2, le=512, alias="MAX_JSON_DEPTH")

    rate_limit_enabled: bool = Field(True, alias="RATE_LIMIT_ENABLED")
    rate_limit_window_s: float = Field(60.0, gt=0, alias="RATE_LIMIT_WINDOW_S")
    rate_limit_requests: int = Field(600, ge=1, alias="RATE_LIMIT_REQUESTS")
    rate_limit_mutations: int = Field(120, ge=1, alias="RATE_LIMIT_MUTATIONS")
    rate_limit_auth: int = Field(20, ge=1, alias="RATE_LIMIT_AUTH")
    apq_enabled: bool = Field(True, alias="APQ_ENABLED")
    batch_enabled: bool = Field(False, alias="BATCH_ENABLED")
    batch_max_operations: int = Field(10, ge=1, le=100, alias="BATCH_MAX_OPERATIONS")
    apq_ttl_days: int = Field(7, ge=1, alias="APQ_TTL_DAYS")
    apq_max_query_bytes: int = Field(32_768, ge=1, alias="APQ_MAX_QUERY_BYTES")
    idempotency_ttl_hours: int = Field(24, ge=1, alias="IDEMPOTENCY_TTL_HOURS")
    idempotency_lock_s: int = Field(30, ge=1, alias="IDEMPOTENCY_LOCK_S")
    idempotency_wait_ms: int = Field(1_000, ge=0, alias="IDEMPOTENCY_WAIT_MS")
    guard_redis_timeout_ms: int = Field(250, ge=1, alias="GUARD_REDIS_TIMEOUT_MS")

    pull_threshold: int = Field(10_000, ge=1, alias="PULL_THRESHOLD")
    push_back_threshold: int = Field(8_000, ge=0, alias="PUSH_BACK_THRESHOLD")
    fanout_batch_size: int = Field(1_000, ge=1, le=10_000, alias="FANOUT_BATCH_SIZE")
    feed_max_len: int = Field(800, ge=20, alias="FEED_MAX_LEN")
    feed_ttl_days: int = Field(30, ge=1, alias="FEED_TTL_DAYS")
    feed_ranked_window: int = Field(100, ge=1, le=1_000, alias="FEED_RANKED_WINDOW")
    feed_ranked_freeze_s: int = Field(300, ge=1, alias="FEED_RANKED_FREEZE_S")
    feed_ranked_half_life_hours: float = Field(6.0, gt=0, alias="FEED_RANKED_HALF_LIFE_HOURS")
    explore_trending_size: int = Field(1_000, ge=10, le=100_000, alias="EXPLORE_TRENDING_SIZE")
    explore_window: int = Field(100, ge=1, le=1_000, alias="EXPLORE_WINDOW")
    explore_half_life_hours: float = Field(24.0, gt=0, alias="EXPLORE_HALF_LIFE_HOURS")
    explore_trending_key: str = Field(
        "trend", pattern=r"^[A-Za-z0-9:._-]{1,64}$", alias="EXPLORE_TRENDING_KEY"
    )
    active_window_days: int = Field(30, ge=1, alias="ACTIVE_WINDOW_DAYS")
    arq_queue: str = Field("arq:queue", alias="ARQ_QUEUE")
    job_attempts: int = Field(5, ge=1, alias="JOB_ATTEMPTS")
    job_timeout_s: int = Field(5, ge=1, alias="JOB_TIMEOUT_S")
    worker_metrics_port: int = Field(9101, ge=0, le=65535, alias="WORKER_METRICS_PORT")
    worker_name: str = Field(default_factory=socket.gethostname, alias="WORKER_NAME")
    worker_heartbeat_s: float = Field(5.0, gt=0, le=300, alias="WORKER_HEARTBEAT_S")
    worker_heartbeat_max_age_s: float = Field(
        30.0, gt=0, le=3600, alias="WORKER_HEARTBEAT_MAX_AGE_S"
    )

    notify_follow_daily_cap: int = Field(20, ge=0, alias="NOTIFY_FOLLOW_DAILY_CAP")

    realtime_engagement: Literal["api", "outbox"] = Field("api", alias="REALTIME_ENGAGEMENT")
    realtime_presence_ttl_s: float = Field(30.0, gt=1, alias="REALTIME_PRESENCE_TTL_S")
    max_subscriptions_per_socket: int = Field(20, ge=1, alias="MAX_SUBSCRIPTIONS_PER_SOCKET")
    gc_freeze: bool = Field(True, alias="GC_FREEZE")

    search_max_results: int = Field(500, ge=1, le=10_000, alias="SEARCH_MAX_RESULTS")
    search_snapshot_ttl_s: int = Field(600, ge=1, alias="SEARCH_SNAPSHOT_TTL_S")
    search_fuzzy_threshold: float = Field(0.45, gt=0, le=1, alias="SEARCH_FUZZY_THRESHOLD")
    suggest_followees: int = Field(200, ge=1, le=10_000, alias="SUGGEST_FOLLOWEES")
    suggest_per_followee: int = Field(50, ge=1, le=10_000, alias="SUGGEST_PER_FOLLOWEE")

    push_provider: Literal["log", "fcm"] = Field("log", alias="PUSH_PROVIDER")
    fcm_credentials_file: Path | None = Field(None, alias="FCM_CREDENTIALS_FILE")
    fcm_project_id: str | None = Field(None, alias="FCM_PROJECT_ID")
    fcm_endpoint: str = Field("https://fcm.googleapis.com", alias="FCM_ENDPOINT")
    push_max_attempts: int = Field(3, ge=1, le=10, alias="PUSH_MAX_ATTEMPTS")
    push_budget_s: float = Field(3.0, gt=0, alias="PUSH_BUDGET_S")
    push_request_timeout_s: float = Field(2.0, gt=0, alias="PUSH_REQUEST_TIMEOUT_S")

    media_hashlist_path: Path | None = Field(None, alias="MEDIA_HASHLIST_PATH")
    media_hashlist_max_distance: int = Field(6, ge=0, le=64, alias="MEDIA_HASHLIST_MAX_DISTANCE")

    smtp_url: str | None = Field(None, alias="SMTP_URL")
    mail_from: str = Field("Roost <no-reply@roost.localhost>", alias="MAIL_FROM")
    smtp_timeout_s: float = Field(10.0, gt=0, alias="SMTP_TIMEOUT_S")
    email_verification_token_hours: float = Field(48, gt=0, alias="EMAIL_VERIFICATION_TOKEN_HOURS")
    password_reset_token_minutes: float = Field(60, gt=0, alias="PASSWORD_RESET_TOKEN_MINUTES")
    mail_per_account_per_hour: int = Field(3, ge=1, alias="MAIL_PER_ACCOUNT_PER_HOUR")
    email_verification_url: str | None = Field(None, alias="EMAIL_VERIFICATION_URL")
    password_reset_url: str | None = Field(None, alias="PASSWORD_RESET_URL")
    require_verified_email_for: str = Field("", alias="REQUIRE_VERIFIED_EMAIL_FOR")

    @model_validator(mode="after")
    def _check_mail(self) -> Settings:
        if self.smtp_url is not None:
            SmtpConfig.from_url(self.smtp_url, self.mail_from)  # ValueError: a clear message
        unknown = self.verified_email_actions - LIMITED_ACTIONS.keys()
        if unknown:
            raise ValueError(
                f"REQUIRE_VERIFIED_EMAIL_FOR: unknown {', '.join(sorted(unknown))}"
                f" (known: {', '.join(LIMITED_ACTIONS)})"
            )
        for name, url in (
            ("EMAIL_VERIFICATION_URL", self.email_verification_url),
            ("PASSWORD_RESET_URL", self.password_reset_url),
        ):
            if url is not None and "{token}" not in url:
                raise ValueError(f"{name} must hold {{token}}, where the link puts the token.")
        return self

    @property
    def verified_email_actions(self) -> frozenset[str]:
        raw = self.require_verified_email_for
        return frozenset(a.strip().lower() for a in raw.split(",") if a.strip())

    @property
    def mail_config(self) -> MailConfig:
        return MailConfig(
            verification_ttl=dt.timedelta(hours=self.email_verification_token_hours),
            reset_ttl=dt.timedelta(minutes=self.password_reset_token_minutes),
            per_account_per_hour=self.mail_per_account_per_hour,
            verification_link=self.email_verification_url,
            reset_link=self.password_reset_url,
            require_verified_for=self.verified_email_actions,
        )

    @property
    def mail_token_key(self) -> bytes:
        """The key of e-mail tokens: HMAC-SHA256 of a fixed label under JWT_SECRET."""
        return hmac.new(self.jwt_secret.encode(), b"roost:mail-token:v1", "sha256").digest()

    account_deletion_grace_days: float = Field(30, ge=0, alias="ACCOUNT_DELETION_GRACE_DAYS")
    account_purge_batch: int = Field(1_000, ge=1, le=100_000, alias="ACCOUNT_PURGE_BATCH")
    username_hold_days: float = Field(30, ge=0, alias="USERNAME_HOLD_DAYS")
    data_export_link_ttl_s: int = Field(900, ge=1, alias="DATA_EXPORT_LINK_TTL_S")
    data_export_retention_hours: float = Field(48, gt=0, alias="DATA_EXPORT_RETENTION_HOURS")
    public_base_url: str | None = Field(None, alias="PUBLIC_BASE_URL")

    media_upload_ttl_s: int = Field(900, ge=60, le=86_400, alias="MEDIA_UPLOAD_TTL_S")
    media_pending_ttl_s: int = Field(3_600, ge=60, alias="MEDIA_PENDING_TTL_S")
    media_max_image_bytes: int = Field(30 * 1024 * 1024, ge=1, alias="MEDIA_MAX_IMAGE_BYTES")
    media_max_video_bytes: int = Field(200 * 1024 * 1024, ge=1, alias="MEDIA_MAX_VIDEO_BYTES")
    media_max_pixels: int = Field(50_000_000, ge=1, alias="MEDIA_MAX_PIXELS")
    media_max_side: int = Field(12_000, ge=16, alias="MEDIA_MAX_SIDE")
    media_max_video_seconds: float = Field(60.0, gt=0, alias="MEDIA_MAX_VIDEO_SECONDS")
    media_url_allowed_hosts: str = Field("", alias="MEDIA_URL_ALLOWED_HOSTS")
    media_job_timeout_s: int = Field(300, ge=1, alias="MEDIA_JOB_TIMEOUT_S")
    media_worker_jobs: int = Field(2, ge=1, le=64, alias="MEDIA_WORKER_JOBS")
    media_storage: Literal["local", "s3"] = Field("local", alias="MEDIA_STORAGE")
    media_dir: Path | None = Field(None, alias="MEDIA_DIR")
    media_signing_key: str | None = Field(None, alias="MEDIA_SIGNING_KEY")
    media_public_base_url: str | None = Field(None, alias="MEDIA_PUBLIC_BASE_URL")
    media_upload_idle_timeout_s: float = Field(30.0, gt=0, alias="MEDIA_UPLOAD_IDLE_TIMEOUT_S")
    s3_endpoint_url: str | None = Field(None, alias="S3_ENDPOINT_URL")
    s3_public_endpoint_url: str | None = Field(None, alias="S3_PUBLIC_ENDPOINT_URL")
    s3_region: str = Field("us-east-1", alias="S3_REGION")
    s3_access_key_id: str | None = Field(None, alias="S3_ACCESS_KEY_ID")
    s3_secret_access_key: str | None = Field(None, alias="S3_SECRET_ACCESS_KEY")
    s3_quarantine_bucket: str | None = Field(None, alias="S3_QUARANTINE_BUCKET")
    s3_delivery_bucket: str | None = Field(None, alias="S3_DELIVERY_BUCKET")
    s3_addressing_style: Literal["auto", "path", "virtual"] = Field(
        "auto", alias="S3_ADDRESSING_STYLE"
    )
    s3_upload_if_none_match: bool = Field(True, alias="S3_UPLOAD_IF_NONE_MATCH")

    @model_validator(mode="after")
    def _check_media(self) -> Settings:
        if self.media_storage == "s3" and not self.s3_quarantine_bucket:
            raise ValueError("MEDIA_STORAGE=s3 needs S3_QUARANTINE_BUCKET.")
        if self.media_signing_key is not None and len(self.media_signing_key.encode()) < 32:
            raise ValueError("MEDIA_SIGNING_KEY must be at least 32 bytes.")
        if self.env == "production":
            for name, secret in (
                ("MEDIA_SIGNING_KEY", self.media_signing_key),
                ("S3_SECRET_ACCESS_KEY", self.s3_secret_access_key),
            ):
                if secret and secret_in_repository(secret):
                    raise ValueError(
                        f"ROOST_ENV=production needs its own {name}: this one is written "
                        "in Roost's repository."
                    )
        return self

    @property
    def media_root(self) -> Path:
        return self.media_dir if self.media_dir is not None else self.data_dir / "media"

    @property
    def media_signing_secret(self) -> bytes:
        """The key of local upload URLs: MEDIA_SIGNING_KEY, else HMAC-SHA256 of a fixed
        label under JWT_SECRET (never the tokens' key itself)."""
        if self.media_signing_key is not None:
            return self.media_signing_key.encode()
        return hmac.new(self.jwt_secret.encode(), b"roost:media-signing:v1", "sha256").digest()

    @property
    def api_origin(self) -> str:
        """Where clients reach this API: PUBLIC_BASE_URL, else http://HOST:PORT (a
        wildcard HOST named as 127.0.0.1)."""
        if self.public_base_url:
            return self.public_base_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    graph_path: Path = Field(DEFAULT_GRAPH_PATH, alias="ROOST_GRAPH_PATH")
    dev_password: str = Field("roost-dev-password", alias="ROOST_DEV_PASSWORD")
    seed_posts: int = Field(200_000, ge=0, alias="ROOST_SEED_POSTS")

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.database_password is not None:
            password = self.database_password

            def with_password(url: str) -> str:
                return make_url(url).set(password=password).render_as_string(hide_password=False)

            if self.database_url:
                self.database_url = with_password(self.database_url)
            if self.database_replica_urls:
                self.database_replica_urls = ",".join(
                    with_password(u.strip())
                    for u in self.database_replica_urls.split(",")
                    if u.strip()
                )
        if self.push_back_threshold > self.pull_threshold:
            raise ValueError("PUSH_BACK_THRESHOLD must not exceed PULL_THRESHOLD.")
        if self.push_provider == "fcm" and self.fcm_credentials_file is None:
            raise ValueError(
                "PUSH_PROVIDER=fcm needs FCM_CREDENTIALS_FILE (a service-account key)."
            )
        if len(self.jwt_secret.encode()) < 32:
            raise ValueError("JWT_SECRET must be at least 32 bytes (RFC 7518 §3.2).")
        if self.env == "production" and (
            self.jwt_secret == DEV_JWT_SECRET or secret_in_repository(self.jwt_secret)
        ):
            raise ValueError(
                "ROOST_ENV=production needs its own JWT_SECRET: this one is written in "
                "Roost's repository. Generate one, e.g. `openssl rand -base64 48`."
            )
        return self

    @property
    def document_limits(self) -> DocumentLimits:
        """The limits checked before a document is validated (app/document_limits.py)."""
        return DocumentLimits(
            max_depth=self.max_query_depth,
            max_aliases=self.max_aliases,
            max_field_merges=self.max_field_merges,
            max_expanded_fields=self.max_expanded_fields,
        )

    @property
    def graphiql_on(self) -> bool:
        """GRAPHIQL_ENABLED, by default off in production."""
        return (
            self.graphiql_enabled if self.graphiql_enabled is not None else self.env != "production"
        )

    @property
    def introspection_on(self) -> bool:
        """INTROSPECTION_ENABLED, by default off in production."""
        on = self.introspection_enabled
        return on if on is not None else self.env != "production"

    @property
    def cors_extra_headers(self) -> list[str]:
        return [h.strip() for h in self.cors_allow_headers.split(",") if h.strip()]

    @property
    def cors_origins(self) -> list[str]:
        """CORS_ALLOW_ORIGINS as a list (empty: CORS off)."""
        return [o.strip().rstrip("/") for o in self.cors_allow_origins.split(",") if o.strip()]

    @property
    def feed_config(self) -> FeedConfig:
        return FeedConfig(
            pull_threshold=self.pull_threshold,
            push_back_threshold=self.push_back_threshold,
            batch_size=self.fanout_batch_size,
            max_len=self.feed_max_len,
            ttl=dt.timedelta(days=self.feed_ttl_days),
            active_window=dt.timedelta(days=self.active_window_days),
            ranking=RankingConfig(
                half_life=dt.timedelta(hours=self.feed_ranked_half_life_hours),
                window=self.feed_ranked_window,
                freeze=dt.timedelta(seconds=self.feed_ranked_freeze_s),
            ),
            explore=ExploreConfig(
                namespace=self.explore_trending_key,
                size=self.explore_trending_size,
                bucket_cap=4 * self.explore_trending_size,
                window=self.explore_window,
                half_life=dt.timedelta(hours=self.explore_half_life_hours),
            ),
        )

    @property
    def replica_urls(self) -> list[str]:
        return [u.strip() for u in (self.database_replica_urls or "").split(",") if u.strip()]

    @property
    def feed_cluster_nodes(self) -> list[str]:
        raw = self.feed_redis_cluster_nodes or ""
        return [n.strip() for n in raw.split(",") if n.strip()]

    def open_feed_redis(self) -> FeedRedis | None:
        """The feed store: the Redis Cluster of FEED_REDIS_URL / FEED_REDIS_CLUSTER_NODES,
        else REDIS_URL's Redis; None without any (connects on first use)."""
        if not (self.redis_url or self.feed_redis_url or self.feed_cluster_nodes):
            return None
        return open_feed_redis(
            self.redis_url or "",
            cluster_url=self.feed_redis_url,
            cluster_nodes=self.feed_cluster_nodes,
        )

    @property
    def notification_config(self) -> NotificationConfig:
        return NotificationConfig(
            follow_daily_cap=self.notify_follow_daily_cap, counter_shards=self.counter_shards
        )

    @property
    def search_config(self) -> SearchConfig:
        return SearchConfig(
            max_results=self.search_max_results,
            snapshot_ttl=dt.timedelta(seconds=self.search_snapshot_ttl_s),
            fuzzy_threshold=self.search_fuzzy_threshold,
            suggest_followees=self.suggest_followees,
            suggest_per_followee=self.suggest_per_followee,
        )

    @property
    def accounts_config(self) -> AccountsConfig:
        return AccountsConfig(
            deletion_grace=dt.timedelta(days=self.account_deletion_grace_days),
            export_link_ttl=dt.timedelta(seconds=self.data_export_link_ttl_s),
            export_retention=dt.timedelta(hours=self.data_export_retention_hours),
            purge_batch=self.account_purge_batch,
            public_base_url=self.public_base_url,
            username_hold=dt.timedelta(days=self.username_hold_days),
        )

    @property
    def media_config(self) -> MediaConfig:
        return MediaConfig(
            upload_ttl=dt.timedelta(seconds=self.media_upload_ttl_s),
            pending_ttl=dt.timedelta(seconds=self.media_pending_ttl_s),
            max_image_bytes=self.media_max_image_bytes,
            max_video_bytes=self.media_max_video_bytes,
            max_pixels=self.media_max_pixels,
            max_side=self.media_max_side,
            max_video_seconds=self.media_max_video_seconds,
            url_allowed_hosts=frozenset(
                h.strip().lower() for h in self.media_url_allowed_hosts.split(",") if h.strip()
            ),
        )

    @property
    def token_config(self) -> TokenConfig:
        return TokenConfig(
            secret=self.jwt_secret,
            codec=JwtCodec(),
            access_ttl=dt.timedelta(minutes=self.access_token_minutes),
            refresh_ttl=dt.timedelta(days=self.refresh_token_days),
            refresh_grace=dt.timedelta(seconds=self.refresh_grace_s),
        )


@lru_cache
def get_settings() -> Settings:
    """Return the process-wide settings, read once from the environment."""
    return Settings()
