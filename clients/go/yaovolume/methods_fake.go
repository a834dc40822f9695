package yaovolume

import (
	"context"
	"io"
	"os"
)

// The Fake's methods are the engine's.

func (f *Fake) ReadFile(ctx context.Context, sid, p string) ([]byte, os.FileMode, error) {
	return f.e().ReadFile(ctx, sid, p)
}
func (f *Fake) ReadFileTo(ctx context.Context, sid, p string, w io.Writer) (os.FileMode, error) {
	return f.e().ReadFileTo(ctx, sid, p, w)
}
func (f *Fake) WriteFile(ctx context.Context, sid, p string, data []byte, perm os.FileMode) error {
	return f.e().WriteFile(ctx, sid, p, data, perm)
}
func (f *Fake) WriteFileFrom(ctx context.Context, sid, p string, r io.Reader, perm os.FileMode) error {
	return f.e().WriteFileFrom(ctx, sid, p, r, perm)
}
func (f *Fake) Stat(ctx context.Context, sid, p string) (*FileInfo, error) {
	return f.e().Stat(ctx, sid, p)
}
func (f *Fake) ListDir(ctx context.Context, sid, p string) ([]FileInfo, error) {
	return f.e().ListDir(ctx, sid, p)
}
func (f *Fake) Remove(ctx context.Context, sid, p string, recursive bool) error {
	return f.e().Remove(ctx, sid, p, recursive)
}
func (f *Fake) Rename(ctx context.Context, sid, o, n string) error {
	return f.e().Rename(ctx, sid, o, n)
}
func (f *Fake) MkdirAll(ctx context.Context, sid, p string) error { return f.e().MkdirAll(ctx, sid, p) }
func (f *Fake) SyncPush(ctx context.Context, sid, dir string, opts ...SyncOption) (*SyncResult, error) {
	return f.e().SyncPush(ctx, sid, dir, opts...)
}
func (f *Fake) SyncPull(ctx context.Context, sid, dir string, opts ...SyncOption) (*SyncResult, error) {
	return f.e().SyncPull(ctx, sid, dir, opts...)
}
func (f *Fake) Copy(ctx context.Context, sid, src, dst string, opts ...SyncOption) (*SyncResult, error) {
	return f.e().Copy(ctx, sid, src, dst, opts...)
}
func (f *Fake) Zip(ctx context.Context, sid, src, dst string, ex []string) (*ArchiveResult, error) {
	return f.e().Zip(ctx, sid, src, dst, ex)
}
func (f *Fake) Unzip(ctx context.Context, sid, src, dst string) (*ArchiveResult, error) {
	return f.e().Unzip(ctx, sid, src, dst)
}
func (f *Fake) Gzip(ctx context.Context, sid, src, dst string) (*ArchiveResult, error) {
	return f.e().Gzip(ctx, sid, src, dst)
}
func (f *Fake) Gunzip(ctx context.Context, sid, src, dst string) (*ArchiveResult, error) {
	return f.e().Gunzip(ctx, sid, src, dst)
}
func (f *Fake) Tar(ctx context.Context, sid, src, dst string, ex []string) (*ArchiveResult, error) {
	return f.e().Tar(ctx, sid, src, dst, ex)
}
func (f *Fake) Untar(ctx context.Context, sid, src, dst string) (*ArchiveResult, error) {
	return f.e().Untar(ctx, sid, src, dst)
}
func (f *Fake) Tgz(ctx context.Context, sid, src, dst string, ex []string) (*ArchiveResult, error) {
	return f.e().Tgz(ctx, sid, src, dst, ex)
}
func (f *Fake) Untgz(ctx context.Context, sid, src, dst string) (*ArchiveResult, error) {
	return f.e().Untgz(ctx, sid, src, dst)
}
func (f *Fake) Close() error { return nil }
