// Package tapestore keeps tapes in object storage, through gocloud.dev/blob:
// S3 and the servers that speak its protocol (s3://), Google Cloud Storage
// (gs://), Azure Blob Storage (azblob://) and a local folder (file://).
//
// A store is a URL naming a bucket and a key prefix,
// s3://BUCKET/PREFIX/?endpoint=http://host:port&region=us-east-1&use_path_style=true
// (gocloud's query parameters), and a tape in it is that URL with the
// tape's name, s3://BUCKET/PREFIX/NAME.jbx. Credentials come from each
// cloud's standard environment (AWS_ACCESS_KEY_ID and the rest), never
// from the URL.
//
// A tape is written locally and uploaded whole when it is closed: under a
// key that holds its tape id, so that keys from many machines never clash,
// never over an existing object (a conditional put where the store has it,
// a check before where it does not), and proven after upload: the object
// reads back as the tape's bytes (their SHA-256). A tape that does not
// verify is not uploaded unless asked (then marked damaged). Every request
// has a deadline (deadline.go). Beside it go a
// small summary object (NAME.jbx.summary.json, what ls shows without
// downloading tapes) and the tape's sidecar folder (NAME.jbx.d/). Each
// upload is noted in the local tape's sidecar (store.json), so that push
// uploads what is pending and skips what is there.
package tapestore
