// `distvae bucket`: map a requested size to a resolution bucket under an explicit policy.

import { BUCKET_POLICIES, chooseBucket, parseBuckets } from '../../entries/plan.js';
import { JSON_OPTION, type CommandSpec } from '../args.js';

export const bucketCommand: CommandSpec = {
  name: 'bucket',
  summary: 'map a requested size to a resolution bucket (pad keeps content; crop and resize change it)',
  usage: ['distvae bucket --height H --width W --buckets "1024x1024,1152x896,..." --policy pad|crop|resize [--json]'],
  options: [
    { name: 'height', kind: 'string', value: 'H', description: 'requested height in pixels' },
    { name: 'width', kind: 'string', value: 'W', description: 'requested width in pixels' },
    { name: 'buckets', kind: 'string', value: 'LIST', description: 'comma-separated HEIGHTxWIDTH bucket sizes' },
    { name: 'policy', kind: 'string', value: 'P', description: `${BUCKET_POLICIES.join(' | ')}` },
    JSON_OPTION,
  ],
  async run(args, io) {
    const height = args.int('height', { required: true });
    const width = args.int('width', { required: true });
    const policy = args.choice('policy', BUCKET_POLICIES, { required: true });
    const bucketsText = args.string('buckets', { required: true });
    args.done();
    const choice = chooseBucket({ height: height!, width: width! }, parseBuckets(bucketsText!), policy!);
    if (args.flag('json')) {
      io.stdout(JSON.stringify(choice) + '\n');
      return 0;
    }
    const lines = [
      `requested ${choice.requested.height}x${choice.requested.width} -> bucket ${choice.bucket.height}x${choice.bucket.width} (${choice.policy})`,
      `area inflation x${choice.areaInflation.toFixed(3)}; content changed: ${choice.contentChanged ? 'yes' : 'no'}; aspect ratio kept: ${choice.aspectPreserved ? 'yes' : 'no'}`,
      choice.note,
    ];
    if (choice.contentBox)
      lines.push(
        `content box: rows ${choice.contentBox.y0}..${choice.contentBox.y1}, cols ${choice.contentBox.x0}..${choice.contentBox.x1} (valid ${(choice.validFraction! * 100).toFixed(1)}% of the bucket)`,
      );
    io.stdout(lines.join('\n') + '\n');
    return 0;
  },
};
