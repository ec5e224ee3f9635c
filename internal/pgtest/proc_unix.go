//go:build unix

package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// serverUser picks the OS user the server runs as: this process's user, or,
// when this process is root (initdb and postgres refuse root), `postgres`
// (created by Debian's package) or else `nobody`. cred is nil when no switch
// is needed.
func serverUser() (string, *syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return "", nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return name, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return "", nil, fmt.Errorf("running as root, and neither a postgres nor a nobody user exists to run the test server as (initdb refuses root); create one (Debian's postgresql package creates postgres) or run the tests as another user")
}

func setCredential(cmd *exec.Cmd, cred *syscall.Credential) {
	if cred == nil {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = cred
}

// chownTree gives path (and everything under it) to the server's user.
func chownTree(path string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	err := filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(cred.Uid), int(cred.Gid))
	})
	if err != nil {
		return fmt.Errorf("giving %s to the server's user: %v", path, err)
	}
	return nil
}
