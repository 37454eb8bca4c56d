package store_test

import (
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/checkpoint/store/s3store"
)

func init() { store.NewS3 = s3store.New }
