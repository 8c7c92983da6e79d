"""Media: uploads (createMediaUpload), the Media of a post and its variants, and the
post's processing state."""
