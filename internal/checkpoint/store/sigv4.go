package store

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// AWS Signature Version 4 for S3, header-based, single-chunk payloads
// (https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html).

const (
	sigAlgorithm     = "AWS4-HMAC-SHA256"
	amzDateFormat    = "20060102T150405Z"
	emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// Credentials are the keys S3 requests are signed with.
type Credentials struct {
	// AccessKeyID is the access key id.
	AccessKeyID string
	// SecretAccessKey is the secret access key.
	SecretAccessKey string
	// SessionToken is the token of temporary credentials (optional); it is
	// sent as X-Amz-Security-Token.
	SessionToken string
}

// signRequest sets X-Amz-Date, X-Amz-Content-Sha256, X-Amz-Security-Token
// (for temporary credentials) and Authorization on req, signing the host
// and every header req carries. payloadHash is the hex SHA-256 of the body.
// The canonical URI is uriEncode of req.URL.Path, so the caller must send
// the path encoded that way (URL.RawPath).
func signRequest(req *http.Request, creds Credentials, region, payloadHash string, now time.Time) {
	amzDate := now.UTC().Format(amzDateFormat)
	req.Header.Set("X-Amz-Date", amzDate)
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	if creds.SessionToken != "" {
		req.Header.Set("X-Amz-Security-Token", creds.SessionToken)
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	names := []string{"host"}
	for name := range req.Header {
		if n := strings.ToLower(name); n != "authorization" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	header := func(name string) string {
		if name == "host" {
			return host
		}
		return strings.Join(req.Header.Values(name), ",")
	}
	canonical := canonicalRequest(req.Method, uriEncode(req.URL.Path, false), req.URL.Query(), names, header, payloadHash)
	scope := amzDate[:8] + "/" + region + "/s3/aws4_request"
	sig := signature(creds.SecretAccessKey, amzDate, region, scope, canonical)
	req.Header.Set("Authorization", sigAlgorithm+" Credential="+creds.AccessKeyID+"/"+scope+
		", SignedHeaders="+strings.Join(names, ";")+", Signature="+sig)
}

// canonicalRequest builds SigV4's canonical request. signed lists the
// lower-case names of the signed headers, sorted; header returns a header's
// value (several values joined by commas).
func canonicalRequest(method, canonicalURI string, query url.Values, signed []string, header func(string) string, payloadHash string) string {
	var b strings.Builder
	b.WriteString(method)
	b.WriteByte('\n')
	if canonicalURI == "" {
		canonicalURI = "/"
	}
	b.WriteString(canonicalURI)
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(query))
	b.WriteByte('\n')
	for _, name := range signed {
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(strings.Join(strings.Fields(header(name)), " "))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signed, ";"))
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	return b.String()
}

// canonicalQuery encodes query sorted by name, then value, each encoded
// with uriEncode (slashes included). It is also the wire form S3 requests
// use.
func canonicalQuery(query url.Values) string {
	var pairs []string
	for k, vs := range query {
		for _, v := range vs {
			pairs = append(pairs, uriEncode(k, true)+"="+uriEncode(v, true))
		}
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "&")
}

// signature returns the hex signature of canonical for the given scope.
func signature(secret, amzDate, region, scope, canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	stringToSign := sigAlgorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	key := hmacSHA256([]byte("AWS4"+secret), amzDate[:8])
	key = hmacSHA256(key, region)
	key = hmacSHA256(key, "s3")
	key = hmacSHA256(key, "aws4_request")
	return hex.EncodeToString(hmacSHA256(key, stringToSign))
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// uriEncode percent-encodes every byte of s except the unreserved
// characters A-Z a-z 0-9 - . _ ~ (and '/', unless encodeSlash), as SigV4
// requires.
func uriEncode(s string, encodeSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '/' && !encodeSlash {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}
