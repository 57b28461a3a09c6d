package tapestore

// The stores a URL can name, each through its driver (bucket.go). The
// default binary holds folders (file://, always) and S3 (s3://, which also
// reaches MinIO, R2, Ceph and GCS's interoperability endpoint); the native
// GCS and Azure drivers bring tens of MB of SDK and their package
// initialisation, so they are opt-in build tags (drivers_*.go), and S3 can
// be left out:
//
//	go build -tags jukebox_gcs,jukebox_azure ./cmd/jukebox   # every driver
//	go build -tags jukebox_nos3 ./cmd/jukebox                # folders only

// builtIn is the schemes whose drivers this binary holds (each driver's
// file adds its own).
var builtIn = map[string]bool{}

// notBuilt says, for each scheme whose driver a build tag governs, how to
// get a binary that has it and what reaches the same store without it.
var notBuilt = map[string]string{
	"s3": "build it without the tag jukebox_nos3",
	"gs": "build it with -tags jukebox_gcs, or reach GCS through its S3 interoperability endpoint with HMAC keys " +
		"in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY: s3://BUCKET/PREFIX/?endpoint=https://storage.googleapis.com&region=auto&request_checksum_calculation=when_required",
	"azblob": "build it with -tags jukebox_azure, or reach the container through an S3-compatible gateway: s3://BUCKET/PREFIX/?endpoint=https://GATEWAY&use_path_style=true",
}
