/** Media type without parameters, lower case ('' when absent). */
export function mediaTypeOf(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Whether a media type means JSON data. Absent ('') means JSON (the spec's default for datacontenttype). */
export function isJsonMediaType(mediaType: string): boolean {
  return (
    mediaType === '' ||
    mediaType === 'application/json' ||
    mediaType === 'text/json' ||
    mediaType.endsWith('+json')
  );
}
