package transparency

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// tileHeight is the height of C2SP tlog-tiles: 256 hashes a tile.
const tileHeight = 8

// maxEntry is the longest record an entry bundle can carry (a uint16
// length prefix).
const maxEntry = 1<<16 - 1

// ReadTile returns tile t of the tree at size n, as C2SP tlog-tiles serves
// it: for t.L ≥ 0, the concatenated hashes of a Merkle tree tile; for
// t.L = -1, an entry bundle (each record's line, without its newline,
// after its length as a big-endian uint16). t.H must be tileHeight, and
// the tile must lie within the first n records (C2SP: empty tiles are not
// served, nor partial ones wider than the tree).
func (t *Tree) ReadTile(tile tlog.Tile, n int64) ([]byte, error) {
	if tile.H != tileHeight || tile.W < 1 || tile.W > 1<<tileHeight || tile.L < -1 || tile.N < 0 {
		return nil, fmt.Errorf("transparency: tile %+v is not a tile of height %d with a width from 1 to 256", tile, tileHeight)
	}
	level := max(tile.L, 0)
	// The tile's last hash covers records up to this end (C2SP tlog-tiles:
	// MTH(D[(n*256+i)*256**l : (n*256+i+1)*256**l]) for i < W).
	if level > 6 {
		return nil, fmt.Errorf("transparency: tile level %d is beyond any tree of this log", tile.L)
	}
	end := (tile.N<<tileHeight + int64(tile.W)) << (tileHeight * level)
	if tile.N > (int64(1)<<62)>>(tileHeight*(level+1)) || end > n {
		return nil, fmt.Errorf("transparency: tile %s is beyond the tree's %d records", tilePath(tile), n)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.inTree(n); err != nil {
		return nil, err
	}
	if tile.L >= 0 {
		return tlog.ReadTileData(tile, hashReader{t})
	}
	var out []byte
	for i := tile.N << tileHeight; i < end; i++ {
		line, err := t.readEntry(i)
		if err != nil {
			return nil, err
		}
		if len(line) > maxEntry {
			return nil, fmt.Errorf("transparency: record %d is %d bytes, more than an entry bundle's %d", i, len(line), maxEntry)
		}
		out = binary.BigEndian.AppendUint16(out, uint16(len(line)))
		out = append(out, line...)
	}
	return out, nil
}
