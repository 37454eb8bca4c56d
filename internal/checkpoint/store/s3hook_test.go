package store

// NewS3 opens an S3 store (package s3store's New); s3store_hook_test.go,
// in package store_test, sets it, since this package's own tests cannot
// import s3store, which imports it.
var NewS3 func(cfg S3Config, bucket, prefix string, opts ...Option) (*Remote, error)

// S3 is the type of the stores NewS3 returns.
type S3 = Remote

// s3Remotes returns the openers that reach S3 as cfg says.
func s3Remotes(cfg S3Config) Remotes {
	return Remotes{"s3": func(bucket, prefix string, opts ...Option) (Store, error) {
		return NewS3(cfg, bucket, prefix, opts...)
	}}
}
