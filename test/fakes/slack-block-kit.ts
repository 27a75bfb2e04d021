/**
 * Block Kit limits Slack's Web API enforces on message blocks, for the fake (docs.slack.dev
 * reference: "Blocks", "Block elements", "Composition objects"; chat.postMessage). A message over a
 * limit gets `invalid_blocks` from Slack; each problem here is the fake's explanation of why.
 */
export const SLACK_LIMITS = {
  /** chat.postMessage / chat.update: blocks per message. */
  blocksPerMessage: 50,
  /** chat.postMessage: `text` over this is refused with msg_too_long. */
  messageText: 40_000,
  blockId: 255,
  sectionText: 3_000,
  sectionFields: 10,
  sectionFieldText: 2_000,
  headerText: 150,
  actionsElements: 25,
  contextElements: 10,
  contextText: 3_000,
  actionId: 255,
  buttonText: 75,
  buttonValue: 2_000,
  buttonUrl: 3_000,
} as const;

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every problem with `blocks` as a message's blocks; empty when Slack would take them. */
export function blockKitProblems(blocks: unknown): string[] {
  const problems: string[] = [];
  if (!Array.isArray(blocks)) return ['blocks must be an array'];
  if (blocks.length > SLACK_LIMITS.blocksPerMessage)
    problems.push(`${blocks.length} blocks, over the ${SLACK_LIMITS.blocksPerMessage} a message may have`);
  const blockIds = new Set<string>();
  const actionIds = new Set<string>();
  blocks.forEach((block, i) => {
    const at = `blocks[${i}]`;
    if (!isObj(block) || typeof block.type !== 'string') {
      problems.push(`${at}: not a block`);
      return;
    }
    if (block.block_id !== undefined) {
      if (
        typeof block.block_id !== 'string' ||
        block.block_id.length === 0 ||
        block.block_id.length > SLACK_LIMITS.blockId
      )
        problems.push(`${at}.block_id: 1-${SLACK_LIMITS.blockId} characters`);
      else if (blockIds.has(block.block_id))
        problems.push(`${at}.block_id: ${block.block_id} is not unique in the message`);
      else blockIds.add(block.block_id);
    }
    switch (block.type) {
      case 'section': {
        if (block.text === undefined && block.fields === undefined)
          problems.push(`${at}: a section needs text or fields`);
        if (block.text !== undefined) textObject(block.text, `${at}.text`, SLACK_LIMITS.sectionText, problems);
        if (block.fields !== undefined) {
          if (!Array.isArray(block.fields) || block.fields.length > SLACK_LIMITS.sectionFields)
            problems.push(`${at}.fields: at most ${SLACK_LIMITS.sectionFields}`);
          else
            for (const [j, f] of block.fields.entries())
              textObject(f, `${at}.fields[${j}]`, SLACK_LIMITS.sectionFieldText, problems);
        }
        if (block.accessory !== undefined) element(block.accessory, `${at}.accessory`, actionIds, problems);
        break;
      }
      case 'header':
        textObject(block.text, `${at}.text`, SLACK_LIMITS.headerText, problems, 'plain_text');
        break;
      case 'divider':
        break;
      case 'actions': {
        const elements = block.elements;
        if (!Array.isArray(elements) || elements.length === 0 || elements.length > SLACK_LIMITS.actionsElements) {
          problems.push(`${at}.elements: 1-${SLACK_LIMITS.actionsElements} elements`);
          break;
        }
        for (const [j, e] of elements.entries()) element(e, `${at}.elements[${j}]`, actionIds, problems);
        break;
      }
      case 'context': {
        const elements = block.elements;
        if (!Array.isArray(elements) || elements.length === 0 || elements.length > SLACK_LIMITS.contextElements) {
          problems.push(`${at}.elements: 1-${SLACK_LIMITS.contextElements} elements`);
          break;
        }
        elements.forEach((e, j) => {
          if (isObj(e) && e.type === 'image') return;
          textObject(e, `${at}.elements[${j}]`, SLACK_LIMITS.contextText, problems);
        });
        break;
      }
      default:
        problems.push(
          `${at}: block type ${block.type} is not one the fake knows (section, header, divider, actions, context)`,
        );
    }
  });
  return problems;
}

function textObject(value: unknown, at: string, max: number, problems: string[], only?: 'plain_text'): void {
  if (!isObj(value) || (value.type !== 'plain_text' && value.type !== 'mrkdwn'))
    return void problems.push(`${at}: a text object (plain_text or mrkdwn)`);
  if (only && value.type !== only) problems.push(`${at}: must be ${only}`);
  if (typeof value.text !== 'string' || value.text.length === 0)
    return void problems.push(`${at}.text: must not be empty`);
  if (value.text.length > max) problems.push(`${at}.text: ${value.text.length} characters, over ${max}`);
}

function element(value: unknown, at: string, actionIds: Set<string>, problems: string[]): void {
  if (!isObj(value)) return void problems.push(`${at}: not an element`);
  if (value.action_id !== undefined) {
    if (
      typeof value.action_id !== 'string' ||
      value.action_id.length === 0 ||
      value.action_id.length > SLACK_LIMITS.actionId
    )
      problems.push(`${at}.action_id: 1-${SLACK_LIMITS.actionId} characters`);
    else if (actionIds.has(value.action_id))
      problems.push(`${at}.action_id: ${value.action_id} is not unique in the message`);
    else actionIds.add(value.action_id);
  }
  if (value.type !== 'button')
    return void problems.push(`${at}: element type ${String(value.type)} is not one the fake knows (button)`);
  textObject(value.text, `${at}.text`, SLACK_LIMITS.buttonText, problems, 'plain_text');
  if (value.value !== undefined && (typeof value.value !== 'string' || value.value.length > SLACK_LIMITS.buttonValue)) {
    problems.push(
      `${at}.value: ${typeof value.value === 'string' ? value.value.length : typeof value.value} characters, over ${SLACK_LIMITS.buttonValue}`,
    );
  }
  if (value.url !== undefined && (typeof value.url !== 'string' || value.url.length > SLACK_LIMITS.buttonUrl))
    problems.push(`${at}.url: over ${SLACK_LIMITS.buttonUrl} characters`);
  if (value.style !== undefined && value.style !== 'primary' && value.style !== 'danger')
    problems.push(`${at}.style: primary or danger`);
}
