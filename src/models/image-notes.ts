import type { ModelImage, ModelMessage } from './model-provider.ts';

/**
 * The transcript for a model that cannot see pictures: each image becomes a line of text saying
 * what was attached, so the model knows a person showed something and can ask for it in words.
 */
export function withImageNotes(messages: readonly ModelMessage[]): ModelMessage[] {
  return messages.map((m) => {
    if (m.role === 'assistant' || !m.images?.length) return m;
    const { images, ...rest } = m;
    return { ...rest, content: [m.content, ...images.map(imageNote)].filter(Boolean).join('\n') };
  });
}

function imageNote(image: ModelImage): string {
  const size = image.width && image.height ? `, ${image.width}×${image.height}` : '';
  const format = image.mediaType.slice('image/'.length).toUpperCase();
  return `[An image was attached here (${image.name}, ${format}${size}); this model cannot see images. Ask for a description in words if it matters.]`;
}
