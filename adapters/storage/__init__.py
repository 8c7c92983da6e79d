"""Object stores behind ``domain.media.ports.ObjectStore``: local disk (``local``, the
default of ``make run`` and ``make test``) and S3-compatible storage (``s3``: AWS S3,
MinIO, Cloudflare R2, GCS through its S3 interoperability)."""
