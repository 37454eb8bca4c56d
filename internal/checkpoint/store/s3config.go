package store

import (
	"time"
)

// Credentials are static S3 access keys (S3Config).
type Credentials struct {
	// AccessKeyID is the access key id.
	AccessKeyID string
	// SecretAccessKey is the secret access key.
	SecretAccessKey string
	// SessionToken is the token of temporary credentials (optional).
	SessionToken string
}

// S3Config says how an S3 store (package s3store) reaches its service.
// It is here, without the client library, for the packages that pass it on.
type S3Config struct {
	// Endpoint is the service's URL without a path,
	// "https://s3.eu-west-3.amazonaws.com" or "http://127.0.0.1:9000".
	// Empty: $AWS_ENDPOINT_URL_S3, else $AWS_ENDPOINT_URL, else AWS
	// (https://s3.amazonaws.com, with the bucket's region).
	Endpoint string
	// Region is the region requests are signed for. Empty:
	// $AWS_REGION, else $AWS_DEFAULT_REGION, else the bucket's region as
	// the service reports it.
	Region string
	// Credentials are static keys. When they are empty the standard
	// chain applies, in this order: the environment ($AWS_ACCESS_KEY_ID,
	// $AWS_SECRET_ACCESS_KEY, $AWS_SESSION_TOKEN), the shared
	// credentials file ($AWS_SHARED_CREDENTIALS_FILE or
	// ~/.aws/credentials, profile $AWS_PROFILE), then an IAM role: web
	// identity ($AWS_WEB_IDENTITY_TOKEN_FILE and $AWS_ROLE_ARN, as on
	// Kubernetes, through AWS STS), ECS or EKS
	// container credentials ($AWS_CONTAINER_CREDENTIALS_RELATIVE_URI,
	// $AWS_CONTAINER_CREDENTIALS_FULL_URI), else the EC2 instance
	// metadata service (unless $AWS_EC2_METADATA_DISABLED is "true").
	// With none of them requests go unsigned.
	Credentials Credentials
	// Transport makes the HTTP requests: an http.RoundTripper, nil for
	// the library's default. It is not typed as one so that the root,
	// which imports this package, does not link net/http.
	Transport any
	// PartSize is the size of the parts of multipart uploads (0: the
	// library's, 16 MiB; at least 5 MiB). Files larger than a part are
	// uploaded in parts, several at a time, read from their source as
	// they are sent.
	PartSize uint64
	// MaxRetries is how many times the library sends one request before
	// it reports a transient failure to the store (0: 10).
	MaxRetries int
	// RetryFor bounds how long the store retries an operation after
	// transient failures when its context has no deadline (0: one
	// minute).
	RetryFor time.Duration
}
