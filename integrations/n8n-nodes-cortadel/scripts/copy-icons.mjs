// Copies the package icon next to every node and credential listed in package.json's `n8n`
// section, where n8n resolves `icon: 'file:cortadel.svg'`.
import { copyFileSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { n8n } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
for (const entry of [...n8n.credentials, ...n8n.nodes]) {
	copyFileSync(join(root, 'icons', 'cortadel.svg'), join(root, dirname(entry), 'cortadel.svg'));
}
